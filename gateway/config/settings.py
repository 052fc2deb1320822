"""One frozen settings object, built from command-line flags and ``MNS_GATEWAY_*`` variables.

This is the one module that reads ``MNS_GATEWAY_*`` (tests/test_import_graph.py holds it to that).
Flags win over the environment, the environment over defaults. Nothing here touches the disk:
resolving generated credentials is :mod:`gateway.auth.generated_keys`' job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gateway.config.checks import FLAGS, problem
from gateway.config.tracing import TracingSettings, tracing_from_env
from gateway.config.unknown_names import refuse_unknown_names
from gateway.errors.commands import SettingsError

ENV_PREFIX = "MNS_GATEWAY_"
#: Long polls one gevent worker process holds at once unless told otherwise: each holds one of
#: its connections (``max_connections``, of which 100 are kept for everything else) and looks
#: at its queue at least once a second.
GEVENT_WAITERS = 900


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def parse_access_keys(env: Mapping[str, str]) -> dict[str, str]:
    """Access keys from ``MNS_GATEWAY_ACCESS_KEY_ID``/``_SECRET`` and ``MNS_GATEWAY_ACCESS_KEYS``.

    ``MNS_GATEWAY_ACCESS_KEYS`` holds ``id:secret`` pairs separated by commas, so several
    applications (or a key being rotated) can be configured at once.
    """
    keys: dict[str, str] = {}
    key_id = env.get(f"{ENV_PREFIX}ACCESS_KEY_ID", "").strip()
    secret = env.get(f"{ENV_PREFIX}ACCESS_KEY_SECRET", "").strip()
    if bool(key_id) != bool(secret):
        # Refused, not ignored: a generated pair in its place would refuse every client.
        given, missing = ("ID", "SECRET") if key_id else ("SECRET", "ID")
        raise SettingsError(
            f"{ENV_PREFIX}ACCESS_KEY_{given} is set but {ENV_PREFIX}ACCESS_KEY_{missing} is not: "
            "set both, or neither to use the generated pair"
        )
    if key_id:
        keys[key_id] = secret
    for pair in _split_list(env.get(f"{ENV_PREFIX}ACCESS_KEYS", "")):
        pair_id, sep, pair_secret = pair.partition(":")
        if not sep or not pair_id or not pair_secret:
            raise SettingsError(f"{ENV_PREFIX}ACCESS_KEYS entries must be id:secret, got {pair!r}")
        keys[pair_id] = pair_secret
    return keys


def parse_queue_bridges(value: str) -> dict[str, dict[str, str]]:
    """``MNS_GATEWAY_QUEUE_BRIDGES``: a JSON object keyed by ``region:account``.

    Each value names the remote service's ``url``, ``access_key_id`` and ``access_key_secret``,
    e.g. ``{"cn-hangzhou:123": {"url": "https://123.mns.cn-hangzhou.aliyuncs.com", ...}}``.
    """
    if not value.strip():
        return {}
    bridges = json.loads(value)
    required = {"url", "access_key_id", "access_key_secret"}
    if not isinstance(bridges, dict) or not all(
        isinstance(v, dict) and required <= v.keys() for v in bridges.values()
    ):
        raise SettingsError(f"{ENV_PREFIX}QUEUE_BRIDGES entries need {sorted(required)}")
    return {str(k): {f: str(v[f]) for f in required} for k, v in bridges.items()}


@dataclass(frozen=True)
class Settings:
    """Everything the gateway needs to know about its deployment."""

    data_dir: Path = Path("./mns-data")
    #: ``MNS_GATEWAY_DATABASE_URL``: empty for SQLite in the data dir, ``postgresql://…`` for a
    #: PostgreSQL database several gateway replicas share.
    database_url: str = ""
    #: Connections each process keeps to PostgreSQL at most (``MNS_GATEWAY_DATABASE_POOL_SIZE``).
    database_pool_size: int = 10
    #: ``MNS_GATEWAY_DATABASE_TIMEOUT``: seconds a request waits for the database (a pooled
    #: connection, a new one, an unanswered packet) before it fails with 503 ServiceUnavailable;
    #: ``/readyz`` waits at most a fifth of it (docs/deploy.md#database-and-disk-faults).
    database_timeout: float = 5.0
    host: str = "127.0.0.1"
    port: int = 8080
    access_keys: Mapping[str, str] = field(default_factory=dict)
    account_id: str = "1234567890"
    region: str = "local"
    #: Whether ``region`` was set (``MNS_GATEWAY_REGION``), not left at its default: only then
    #: must a V4 signature's scope name it (:attr:`signing_region`).
    region_set: bool = False
    public_url: str = ""
    retry_scale: float = 1.0
    max_body_bytes: int = 512 * 1024
    sqlite_synchronous: str = "FULL"
    workers: int = 1
    threads: int = 64
    #: "gevent" (one event loop per process: many idle long polls and keep-alive connections,
    #: and a request costs less than on threads, docs/benchmarks.md#where-the-time-goes; served
    #: by gevent's WSGI server, see :mod:`gateway.serving.pywsgi_worker`), "gthread", or any
    #: other gunicorn worker class verbatim. ``mns-gateway worker`` follows it too: OS threads
    #: for its pushes with "gthread", greenlets otherwise.
    worker_class: str = "gevent"
    delivery_threads: int = 32
    max_pushes_per_route: int = 16
    lease_seconds: float = 60.0
    log_dir: Path | None = None
    egress_allow: tuple[str, ...] = ()
    egress_deny: tuple[str, ...] = ()
    push_timeout: float = 5.0
    signing_key_file: Path | None = None
    signing_cert_file: Path | None = None
    admin_access_keys: tuple[str, ...] = ()
    #: Long polls one process holds at once; ``None`` sizes it from the worker class
    #: (:attr:`waiter_limit`).
    max_waiters: int | None = None
    #: ``MNS_GATEWAY_LONG_POLL_RECHECK``: the longest a long poll sleeps without looking at its
    #: queue again. A wake-up from a send ends the sleep at once; this bounds what a lost one
    #: costs (a datagram between processes, a NOTIFY between replicas during an outage).
    long_poll_recheck: float = 1.0
    max_queues: int = 1000
    #: Seconds a client has to send a request's whole head, from connecting (or, on a kept-alive
    #: connection, from its first byte); also the longest a body may stall between two reads.
    header_timeout: float = 10.0
    #: Connections one worker process holds; see docs/deploy.md#connection-limits.
    max_connections: int = 4096
    smtp_url: str = ""
    mail_from: str = ""
    #: ``MNS_GATEWAY_INBOX=1``: SMS and mail are kept in the inbox instead of sent, and the
    #: ``/dev/`` endpoints exist (docs/delivery.md#the-inbox).
    inbox: bool = False
    #: ``MNS_GATEWAY_SMS_PROVIDER``: "" (SMS endpoints cannot be delivered), ``aliyun`` or
    #: ``webhook`` (docs/delivery.md#sms-providers). The inbox, when on, takes precedence.
    sms_provider: str = ""
    sms_endpoint: str = "https://dysmsapi.aliyuncs.com"
    sms_access_key_id: str = ""
    sms_access_key_secret: str = field(default="", repr=False)
    sms_webhook_url: str = ""
    sms_webhook_secret: str = field(default="", repr=False)
    #: Seconds requests and pushes in flight get to finish after SIGTERM. Longer than the longest
    #: long poll (30 s), so a rolling restart answers every ReceiveMessage it holds
    #: (docs/deploy.md#stopping-gracefully).
    graceful_timeout: int = 40
    #: ``MNS_GATEWAY_WORKER_PROBES``: ``HOST:PORT`` where ``mns-gateway worker`` answers
    #: ``/healthz``, ``/readyz`` and ``/metrics``; empty, none (docs/deploy.md#delivery-workers).
    worker_probes: str = ""
    #: "region:account" -> {"url", "access_key_id", "access_key_secret"} of remote MNS services
    #: that QueueEndpoints of other regions or accounts are forwarded to.
    queue_bridges: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: ``MNS_GATEWAY_CONSOLE=0`` turns off the web console at ``/console/`` (docs/console.md).
    console: bool = True
    #: OpenTelemetry tracing, from the standard ``OTEL_*`` variables (gateway/config/tracing.py).
    tracing: TracingSettings = field(default_factory=TracingSettings)

    @property
    def bound_url(self) -> str:
        """The address ``serve`` binds, as a URL (an IPv6 address in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    #: Each push endpoint's circuit breaker (docs/delivery.md#endpoint-health):
    #: ``MNS_GATEWAY_BREAKER=0`` turns it off; it opens when ``breaker_failure_rate`` of at least
    #: ``breaker_min_attempts`` attempts within ``breaker_window`` seconds failed, and lets a
    #: probe out after ``breaker_cool_down`` seconds (doubled per failed probe, at most
    #: ``breaker_max_cool_down``). Its times are multiplied by ``retry_scale`` too.
    breaker: bool = True
    breaker_failure_rate: float = 0.7
    breaker_min_attempts: int = 10
    breaker_window: float = 300.0
    breaker_cool_down: float = 30.0
    breaker_max_cool_down: float = 300.0
    #: ``MNS_GATEWAY_BREAKER_EVENTS_TOPIC``: a topic of this gateway each breaker transition is
    #: published to (docs/delivery.md#operator-events); empty, none.
    breaker_events_topic: str = ""
    #: The egress proxy pushes leave through (``MNS_GATEWAY_PUSH_PROXY``, ``http://host:port``,
    #: perhaps with ``user:password@``), the hosts and CIDRs reached directly, a CA bundle
    #: trusted beside the system's, and a client certificate and key (PEM files) for endpoints
    #: that ask for one (docs/delivery.md#egress-proxy, #private-ca-and-client-certificates).
    push_proxy: str = field(default="", repr=False)
    push_no_proxy: tuple[str, ...] = ()
    push_ca_file: Path | None = None
    push_client_cert: Path | None = None
    push_client_key: Path | None = None
    #: ``MNS_GATEWAY_HISTORY_RETENTION``: seconds a delivered push's history (the Deliveries
    #: page, a replay of a delivered message) and a topic message no delivery needs any more are
    #: kept; a message a delivery still needs is kept up to its topic's retention whatever this
    #: says (docs/deploy.md#retention).
    history_retention: int = 86400
    #: ``MNS_GATEWAY_LOG_RETENTION``: seconds operation-log files are kept; ``None`` (unset, the
    #: default), forever (docs/deploy.md#retention).
    log_retention: int | None = None

    @property
    def base_url(self) -> str:
        """The URL clients reach us at, used in ``Location`` headers and resource URLs."""
        return (self.public_url or self.bound_url).rstrip("/")

    @property
    def signing_region(self) -> str | None:
        """The region a V4 signature's scope must name; ``None``, any region, when nobody set
        one: the region is part of the key derivation, not a secret, and a client configured
        for its production region should work against a gateway left at its defaults
        (docs/protocol.md#signature-v4)."""
        return self.region if self.region_set else None

    @property
    def gunicorn_worker_class(self) -> str:
        if self.worker_class == "gevent":
            return "gateway.serving.pywsgi_worker.PyWSGIWorker"
        if self.worker_class == "gthread":
            return "gateway.serving.gthread_worker.ThreadWorker"
        return self.worker_class

    @property
    def pushes_on_greenlets(self) -> bool:
        """Whether ``mns-gateway worker`` runs its pushes on gevent rather than OS threads."""
        return self.worker_class != "gthread"

    @property
    def waiter_limit(self) -> int:
        """How many receives may wait for a message at once in one process.

        A waiting receive holds what the worker class serves a request with: a greenlet and one
        of ``max_connections`` connections with gevent (:data:`GEVENT_WAITERS`, and 100
        connections kept for everything else), a server thread with gthread (16 are kept).
        Beyond the limit a receive on an empty queue gets MessageNotExist at once instead of
        starving senders.
        """
        if self.max_waiters is not None:
            return self.max_waiters
        if self.worker_class == "gthread":
            return max(1, self.threads - 16)
        return max(1, min(GEVENT_WAITERS, self.max_connections - 100))

    @property
    def database_path(self) -> Path:
        return self.data_dir / "gateway.sqlite3"

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _env_flag(value: str) -> bool:
    try:
        return FLAGS[value.strip().lower()]
    except KeyError:
        raise ValueError("must be 1, true, yes or on, or 0, false, no or off") from None


def _optional_path(value: str) -> Path | None:
    return Path(value.strip()) if value.strip() else None


def _optional_int(value: str) -> int | None:
    return _whole(value) if value.strip() else None


def _strip(value: str) -> str:
    return value.strip()


def _whole(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError("must be a whole number") from None


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError("must be a number") from None


#: How each setting is read from its variable, ``MNS_GATEWAY_`` and the field's name in
#: capitals (``port``: ``MNS_GATEWAY_PORT``); an unset variable leaves the field's default.
#: ``access_keys`` comes from three variables (:func:`parse_access_keys`).
READERS: Mapping[str, Callable[[str], object]] = {
    "data_dir": Path,
    "database_url": _strip,
    "database_pool_size": _whole,
    "database_timeout": _number,
    "host": str,
    "port": _whole,
    "account_id": str,
    "region": _strip,
    "public_url": str,
    "retry_scale": _number,
    "max_body_bytes": _whole,
    "sqlite_synchronous": str.upper,
    "workers": _whole,
    "threads": _whole,
    "worker_class": str,
    "delivery_threads": _whole,
    "max_pushes_per_route": _whole,
    "lease_seconds": _number,
    "log_dir": _optional_path,
    "egress_allow": _split_list,
    "egress_deny": _split_list,
    "push_timeout": _number,
    "signing_key_file": _optional_path,
    "signing_cert_file": _optional_path,
    "admin_access_keys": _split_list,
    "max_waiters": _optional_int,
    "long_poll_recheck": _number,
    "max_queues": _whole,
    "header_timeout": _number,
    "max_connections": _whole,
    "smtp_url": str,
    "mail_from": str,
    "inbox": _env_flag,
    "sms_provider": lambda value: value.strip().lower(),
    "sms_endpoint": _strip,
    "sms_access_key_id": _strip,
    "sms_access_key_secret": _strip,
    "sms_webhook_url": _strip,
    "sms_webhook_secret": _strip,
    "queue_bridges": parse_queue_bridges,
    "graceful_timeout": _whole,
    "worker_probes": _strip,
    "console": _env_flag,
    "breaker": _env_flag,
    "breaker_failure_rate": _number,
    "breaker_min_attempts": _whole,
    "breaker_window": _number,
    "breaker_cool_down": _number,
    "breaker_max_cool_down": _number,
    "breaker_events_topic": _strip,
    "push_proxy": _strip,
    "push_no_proxy": _split_list,
    "push_ca_file": _optional_path,
    "push_client_cert": _optional_path,
    "push_client_key": _optional_path,
    "history_retention": _whole,
    "log_retention": _optional_int,
}


def env_name(field_name: str) -> str:
    return f"{ENV_PREFIX}{field_name.upper()}"


#: The variables :func:`parse_access_keys` reads, the only ones outside :data:`READERS`.
ACCESS_KEY_VARIABLES = ("ACCESS_KEY_ID", "ACCESS_KEY_SECRET", "ACCESS_KEYS")


def known_names() -> frozenset[str]:
    """Every ``MNS_GATEWAY_*`` variable the gateway reads: a field of :data:`READERS` (which a
    new setting is added to, to be read at all) makes its name known, nothing else needed."""
    return frozenset(env_name(name) for name in READERS) | {
        f"{ENV_PREFIX}{name}" for name in ACCESS_KEY_VARIABLES
    }


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Defaults overlaid with every ``MNS_GATEWAY_*`` variable that is set; a variable of that
    prefix that is no setting is refused (:mod:`gateway.config.unknown_names`)."""
    env = os.environ if env is None else env
    refuse_unknown_names(env, ENV_PREFIX, known_names())
    given = {name: _read(name, env[env_name(name)]) for name in READERS if env_name(name) in env}
    if given.get("region") == "":  # ``MNS_GATEWAY_REGION=``, as an env file leaves it: unset
        del given["region"]
    given["region_set"] = "region" in given
    return Settings(  # type: ignore[arg-type]
        access_keys=parse_access_keys(env), tracing=tracing_from_env(env), **given
    )


def _read(name: str, value: str) -> object:
    """One variable's value, read and checked (:mod:`gateway.config.checks`), or a
    :class:`SettingsError` naming it (``int("x")`` says only "invalid literal for int()", not
    which of forty variables held it)."""
    try:
        return read_value(name, value)
    except SettingsError:
        raise
    except ValueError as error:
        raise SettingsError(f"{env_name(name)}={value!r} is not valid: {error}") from error


def read_value(name: str, text: str) -> object:
    """The setting ``name``'s value from ``text``, as its variable or its command-line flag
    gives it; ``ValueError`` says what is wrong with it."""
    value = READERS[name](text)
    wrong = problem(name, value)
    if wrong is not None:
        raise ValueError(wrong)
    return value


def admin_access_key(env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``MNS_GATEWAY_ACCESS_KEY_ID`` and ``_SECRET`` as they are set (``mns-gateway admin`` signs
    its requests with them when no key is given on its command line)."""
    env = os.environ if env is None else env
    return env.get(f"{ENV_PREFIX}ACCESS_KEY_ID"), env.get(f"{ENV_PREFIX}ACCESS_KEY_SECRET")
