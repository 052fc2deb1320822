"""What the gateway tells operators: the operation log (oplog) and Prometheus metrics."""
