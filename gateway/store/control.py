"""The control plane's state over a :class:`~gateway.store.backends.database.Database`: tags,
rate-limit policies, signature nonces, numbered listings (docs/control-plane.md).

Queues, topics and subscriptions themselves stay in :mod:`gateway.store.queues` and
:mod:`gateway.store.topics`: the control plane reads and changes the same rows as the data API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from gateway.auth.endpoint_acl import EndpointAcl
from gateway.errors.control import TagLimitError
from gateway.errors.mns import MNSError
from gateway.queues.records import Queue, QueueType
from gateway.store.backends.database import Database
from gateway.store.shared import SharedSettings
from gateway.store.sql import control_sql as sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.control_sql import EndpointFilter, Listing, ListQuery
from gateway.store.sql.queue_sql import queue_from_row
from gateway.store.sql.topic_sql import subscription_of, topic_of
from gateway.store.values import MAX_TAGS, RateLimitPolicy, Tags
from gateway.topics.records import Subscription, Topic

_MISSING: Final = {"queue": "QueueNotExist", "topic": "TopicNotExist"}


#: Shared settings (:class:`~gateway.store.shared.SharedSettings`) of the control plane.
ENDPOINT_SETTING = "control_endpoint_public"
ACCOUNT_SETTING = "control_account_attributes"
EVENT_RULES_SETTING = "control_event_rules"


class ControlStore:
    def __init__(self, database: Database, clock: Callable[[], float]) -> None:
        self.database = database
        self.clock = clock
        self.settings = SharedSettings(database)

    # endpoint, account attributes, event rules: small documents every replica shares ----------
    def endpoint(self) -> EndpointAcl:
        return EndpointAcl.from_json(self.settings.get(ENDPOINT_SETTING))

    def change_endpoint(self, apply: Callable[[EndpointAcl], EndpointAcl]) -> EndpointAcl:
        text = self.settings.update(
            ENDPOINT_SETTING, lambda stored: apply(EndpointAcl.from_json(stored)).to_json()
        )
        return EndpointAcl.from_json(text)

    def document(self, name: str) -> dict[str, Any]:
        """The JSON document kept as shared setting ``name`` (empty when never set)."""
        return json.loads(self.settings.get(name) or "{}")

    def change_document(
        self, name: str, apply: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        text = self.settings.update(
            name, lambda stored: json.dumps(apply(json.loads(stored or "{}")))
        )
        return json.loads(text)

    # tags -------------------------------------------------------------------------------------
    def tags(self, resource_type: str, name: str) -> list[tuple[str, str]]:
        return self.database.read(lambda c: sql.tags_of(c, resource_type, name))

    def tag(
        self, resource_type: str, names: Sequence[str], tags: Tags, max_tags: int = MAX_TAGS
    ) -> None:
        """Tag every one of ``names``, all or none: ``QueueNotExist`` or ``TopicNotExist`` for
        a missing one, :class:`TagLimitError` for one that would carry more than
        ``max_tags``. Rows are locked in name order, so two calls naming the same resources
        in another order wait for each other instead of deadlocking (PostgreSQL)."""
        ordered = sorted(set(names))
        self.database.write(
            lambda c: [tag_resource(c, resource_type, name, tags, max_tags) for name in ordered]
        )

    def untag(self, resource_type: str, names: Sequence[str], keys: Sequence[str] | None) -> None:
        self.database.write(
            lambda c: [sql.remove_tags(c, resource_type, name, keys) for name in names]
        )

    def tags_by_name(
        self, resource_type: str, names: Sequence[str]
    ) -> dict[str, list[tuple[str, str]]]:
        """Each of ``names``' tags as (key, value), in one read (a page of a list)."""
        found: dict[str, list[tuple[str, str]]] = {}
        if names:
            for name, key, value in self.tagged(resource_type, names, ()):
                found.setdefault(name, []).append((key, value))
        return found

    def tagged(
        self,
        resource_type: str,
        names: Sequence[str],
        tags: Tags,
        *,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[tuple[str, str, str]]:
        """(name, key, value) by name and key; ``after`` a (name, key) position, at most
        ``limit`` (:func:`gateway.store.sql.control_sql.tagged`)."""
        return self.database.read(
            lambda c: sql.tagged(c, resource_type, names, tags, after=after, limit=limit)
        )

    # numbered listings ------------------------------------------------------------------------
    def list_queues(self, query: ListQuery, queue_type: QueueType | None) -> Listing[Queue]:
        scope = None if queue_type is None else ("queue_type", queue_type.value)
        return self.database.read(
            lambda c: sql.numbered_page(
                c, "queues", query, queue_from_row, resource_type="queue", scope=scope
            )
        )

    def list_topics(self, query: ListQuery) -> Listing[Topic]:
        return self.database.read(
            lambda c: sql.numbered_page(c, "topics", query, topic_of, resource_type="topic")
        )

    def list_subscriptions(
        self, topic_name: str, query: ListQuery, endpoints: EndpointFilter | None = None
    ) -> Listing[Subscription]:
        return self.database.read(
            lambda c: sql.numbered_page(
                c,
                "subscriptions",
                query,
                subscription_of,
                scope=("topic_name", topic_name),
                endpoints=endpoints,
            )
        )

    # rate-limit policies ----------------------------------------------------------------------
    def rate_limit(self, resource_type: str, name: str) -> RateLimitPolicy | None:
        found = self.database.read(lambda c: sql.rate_limit_of(c, resource_type, name))
        return None if found is None else RateLimitPolicy(*found)

    def rate_limits(self, resource_type: str, names: Sequence[str]) -> dict[str, RateLimitPolicy]:
        """The policies of those of ``names`` that have one (the console shows a page of them)."""
        found = self.database.read(lambda c: sql.rate_limits_of(c, resource_type, names))
        return {name: RateLimitPolicy(*policy) for name, policy in found.items()}

    def set_rate_limit(self, resource_type: str, name: str, policy: RateLimitPolicy) -> None:
        self.database.write(lambda c: _set_rate_limit(c, resource_type, name, policy))

    def take_receives(self, queue_name: str, wanted: int) -> tuple[int, int] | None:
        """(granted, second) of ``wanted`` received messages under the queue's enabled
        TenantRateLimitPolicy; ``None`` when it has none."""
        second = int(self.clock())
        return self.database.write(
            lambda c: sql.take_allowance(c, "queue", queue_name, wanted, second), durable=False
        )

    def give_back_receives(self, queue_name: str, unused: int, second: int) -> None:
        self.database.write(
            lambda c: sql.give_back(c, "queue", queue_name, unused, second), durable=False
        )

    def limited_queues(self) -> frozenset[str]:
        return frozenset(self.database.read(lambda c: sql.limited(c, "queue")))

    # nonces -----------------------------------------------------------------------------------
    def remember_nonce(self, key_id: str, nonce: str, until: int) -> bool:
        """Remember ``nonce`` of ``key_id`` until the epoch second ``until``; ``False`` if it is
        remembered already, on any replica sharing the database."""
        now = int(self.clock())
        return self.database.write(lambda c: sql.remember_nonce(c, key_id, nonce, now, until))


def _set_rate_limit(
    conn: Connection, resource_type: str, name: str, policy: RateLimitPolicy
) -> None:
    sql.set_rate_limit(conn, resource_type, name, policy.enabled, policy.max_per_second)


def tag_resource(
    conn: Connection, resource_type: str, name: str, tags: Tags, max_tags: int = MAX_TAGS
) -> None:
    """Tag one queue or topic inside the caller's transaction: ``QueueNotExist`` or
    ``TopicNotExist`` for a missing one, :class:`TagLimitError` for too many tags."""
    if not sql.lock_resource(conn, resource_type, name):
        raise MNSError(_MISSING[resource_type])
    keys = {key for key, _ in sql.tags_of(conn, resource_type, name)}
    if len(keys | {key for key, _ in tags}) > max_tags:
        raise TagLimitError(resource_type, max_tags)
    sql.set_tags(conn, resource_type, name, tags)


def give_created(
    conn: Connection,
    resource_type: str,
    name: str,
    tags: Tags = (),
    rate_limit: RateLimitPolicy | None = None,
) -> None:
    """The tags and TenantRateLimitPolicy a create gives its resource, in the create's own
    transaction, after the resource's row: a resource never exists without them, and a refused
    tag undoes the create."""
    if tags:
        tag_resource(conn, resource_type, name, tags)
    if rate_limit is not None:
        _set_rate_limit(conn, resource_type, name, rate_limit)


def change_rate_limit(
    conn: Connection, resource_type: str, name: str, rate_limit: RateLimitPolicy | None
) -> None:
    """The TenantRateLimitPolicy a SetQueueAttributes or SetSubscriptionAttributes sets, in its
    own transaction (``None``: unchanged)."""
    if rate_limit is not None:
        _set_rate_limit(conn, resource_type, name, rate_limit)
