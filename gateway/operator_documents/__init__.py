"""What operators are shown of the operations on deliveries: the JSON documents the admin API
answers with and ``mns-gateway ... --json`` prints (one shape, local or remote), and the same
for people (times in ISO-8601 UTC), which the command line prints and the console flashes.

Pure: typed results of :mod:`gateway.operations` in, documents and text out.
"""
