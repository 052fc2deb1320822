"""The MNS topic model's core: records (``records``), the FilterTag fan-out rule (``fanout``) and
the XML of topics, subscriptions and published messages (``wire``), all free of IO. Storage is
:mod:`gateway.store.topics`, the HTTP views :mod:`gateway.api.topics`, pushing
:mod:`gateway.delivery`.
"""
