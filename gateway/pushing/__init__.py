"""The IO that pushes: sockets, the senders, the key ring, the delivery worker and settler."""
