"""The MNS queue model's pure core: message states and ordering (``states``), receipt handles
(``receipts``), the wire format (``wire``), long-poll waiting (``waiters``) and operation-log
records (``oplog_records``); ``wake_socket`` is the one IO shell, carrying wake-ups between
worker processes. Storage is :mod:`gateway.store.queues`, the HTTP views :mod:`gateway.api.queues`
and :mod:`gateway.api.messages`. See docs/queues.md.
"""
