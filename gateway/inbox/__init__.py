"""The inbox: with ``MNS_GATEWAY_INBOX=1``, SMS and mail are kept instead of sent, so that a team's
development setup and CI can see exactly what would have gone out (docs/delivery.md#the-inbox).

``records`` turns a delivery's prepared SMS or mail into entries (pure);
:mod:`gateway.pushing.inbox_sender` is the :class:`~gateway.pushing.senders.Sender` that stores
them, and :mod:`gateway.cli.inbox` is ``mns-gateway inbox sms|mail``. The entries live in the store
(:mod:`gateway.store.inbox`), so every replica sharing a database sees the same inbox; the
HTTP views are :mod:`gateway.api.dev`.
"""
