"""The MNS queue model's pure core: message states and ordering (``states``), receipt handles
(``receipts``), the wire format (``wire``), long-poll waiting (``waiters``) and operation-log
records (``oplog_records``). Storage is :mod:`gateway.store.queues` (wake-ups between processes:
:mod:`gateway.store.notify.notifier`), the HTTP views :mod:`gateway.api.queues` and
:mod:`gateway.api.messages`. See docs/queues.md.
"""
