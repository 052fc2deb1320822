"""PostgreSQL, for several gateway replicas sharing one database: psycopg 3 and psycopg_pool.

Each read runs in a ``REPEATABLE READ READ ONLY`` transaction (one snapshot for all its
statements), each write in a READ COMMITTED one: claims rely on it, re-checking their lease
condition on the row as another transaction left it rather than failing. A write is the
*implicit* transaction of its pipeline: no ``BEGIN`` and no ``COMMIT``, its statements up to the
Sync that ends the pipeline are one transaction, which that Sync commits, or rolls back if one
of them failed (the protocol's own rule for statements sent without a transaction block): two
statements less per write than an explicit block, a worker's claim three instead of five
(docs/benchmarks.md#a-write-without-begin-and-commit). Writes that lose nothing acknowledged when
lost (``durable=False``: delivery claims and outcomes) commit with ``synchronous_commit`` off for
that transaction only; everything acknowledged to a client waits for the WAL flush as usual.
PostgreSQL's own group commit lets concurrent commits share a flush, so unlike SQLite there is
no writer to funnel writes through.

Under gevent (gunicorn's workers, ``mns-gateway worker``) a query must block only its greenlet:
:func:`~gateway.store.backends.pg_waiting.cooperative_waiting` makes psycopg wait on gevent's hub.

A server that goes away (restarted, failed over, unreachable) fails each call within ``timeout``
seconds with :class:`~gateway.errors.StoreUnavailableError`: the pool waits that
long for a connection, a new connection that long to connect, and a sent packet that long for
its acknowledgement (``tcp_user_timeout``). Pooled connections are checked before use, so the first
requests after the server is back do not fail on connections it closed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any, Final, NamedTuple, TypeVar

import psycopg
from psycopg.pq import ExecStatus, PipelineStatus, TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from gateway.errors import StoreUnavailableError
from gateway.errors.mns import MNSError
from gateway.store.backends.liveness import Liveness
from gateway.store.backends.outage import Outage
from gateway.store.backends.pg_waiting import cooperative_waiting
from gateway.store.notify.pg_notifier import PgNotifier
from gateway.store.sql.connection import POSTGRESQL, Dialect, Params, SelfContained
from gateway.store.sql.migrations import migrate as apply_migrations

T = TypeVar("T")
log = logging.getLogger(__name__)
# The pool warns at every failed attempt to refill itself, several a second through an outage;
# the outage is logged once by the store (gateway.store.backends.outage) instead.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

DEFAULT_POOL_SIZE = 10
DEFAULT_TIMEOUT = 5.0
#: SQLSTATEs of a server that cannot serve us now, though the connection itself may still be up:
#: shutting down or starting (57P01-57P03), or a standby that no longer takes writes (25006,
#: a connection opened before a failover).
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "25006"})


class Opening(NamedTuple):
    """What a transaction sends before its work, and whether that opens a block (which the
    transaction's end then commits) rather than leaving it the pipeline's implicit one."""

    statements: tuple[str, ...]
    block: bool


#: One snapshot for all of a read's statements.
_READ = Opening(("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",), block=True)
#: A write's, by ``durable``. ``set_config(…, true)`` lasts until its transaction ends, an
#: implicit one too (``SET LOCAL`` would as well, with a warning each time).
_WRITE = {
    True: Opening((), block=False),
    False: Opening(("SELECT set_config('synchronous_commit', 'off', true)",), block=False),
}


@lru_cache(maxsize=2048)
def translate(statement: str) -> str:
    """A store statement in PostgreSQL's own placeholder style, ``$1``, ``$2``, … for its
    ``?``s, to run on a :class:`psycopg.RawCursor`. Store statements never put ``?`` inside a
    string literal. Cached: the set of distinct statements is small and this runs for every one
    executed.

    Not psycopg's ``%s`` style: psycopg parses such a query for its placeholders (a regular
    expression per placeholder) and keeps the result only for queries of at most 50 parameters,
    so a multi-row INSERT (a publish's ten deliveries, a settle's history) was parsed again on
    every execution, about as much CPU as the rest of the statement
    (docs/benchmarks.md#postgresqls-placeholders). A raw query is sent as it is.
    """
    pieces = statement.split("?")
    numbered = (f"{piece}${number}" for number, piece in enumerate(pieces[:-1], 1))
    return "".join(numbered) + pieces[-1]


class PipelinedResult:
    """One statement's result in pipeline mode: rows and the row count are waited for only when
    asked for (fetching already does so in psycopg; a row count needs a sync first)."""

    __slots__ = ("_cursor", "_pipeline")

    def __init__(self, cursor: psycopg.Cursor[Any], pipeline: psycopg.Pipeline | None) -> None:
        self._cursor = cursor
        self._pipeline = pipeline

    @property
    def rowcount(self) -> int:
        if self._cursor.pgresult is None and self._pipeline is not None:
            self._wait()
        return self._cursor.rowcount

    def _wait(self) -> None:
        """Wait for this statement's result as a fetch does, with a flush: a Sync would end a
        write's implicit transaction halfway. psycopg's fetch also wants rows, and says so once
        the result is in ("the last operation didn't produce records"); a row read is put back."""
        try:
            if self._cursor.fetchone() is not None:
                self._cursor.scroll(0, "absolute")
        except psycopg.ProgrammingError:
            result = self._cursor.pgresult  # None if the statement itself failed
            if result is None or result.status != ExecStatus.COMMAND_OK:
                raise

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)


class PgConnection:
    """A psycopg connection in pipeline mode as a :class:`~gateway.store.sql.connection.Connection`.

    Statements are sent without waiting for their results; the transaction waits for the
    server only where the work reads a result (and once at COMMIT). A publish, for instance,
    is two round trips instead of seven.
    """

    dialect: Dialect = POSTGRESQL

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        pipeline: psycopg.Pipeline | None,
        *,
        in_block: bool = False,
    ) -> None:
        self._connection = connection
        self._pipeline = pipeline
        #: Whether a transaction block is open (a read's, or a write's that :meth:`atomic`
        #: made one), which the transaction's end then commits.
        self.in_block = in_block

    def execute(self, sql: str, parameters: Params = (), /) -> PipelinedResult:
        cursor = psycopg.RawCursor(self._connection)
        cursor.execute(translate(sql), parameters)
        return PipelinedResult(cursor, self._pipeline)

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> None:
        # psycopg's Connection has no executemany; a cursor's pipelines the statements.
        with psycopg.RawCursor(self._connection) as cursor:
            cursor.executemany(translate(sql), parameters)

    def atomic(self) -> AbstractContextManager[object]:
        """Inside a write's transaction (pipeline mode), that transaction made a block: a
        ``BEGIN`` within an implicit transaction takes in what it ran so far, and the block
        lasts to the write's end. A SelfContained write runs statement by statement, so its
        block gets a transaction of its own."""
        if self._pipeline is None:
            return self._connection.transaction()
        if not self.in_block:
            self._connection.execute("BEGIN")
            self.in_block = True
        return contextlib.nullcontext()


class PostgresDatabase:
    """A :class:`~gateway.store.backends.database.Database` on a PostgreSQL URL (``postgresql://…``)."""

    def __init__(
        self,
        url: str,
        *,
        migrate: bool = True,
        pool_size: int = DEFAULT_POOL_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
        liveness: Liveness | None = None,
    ):
        cooperative_waiting()
        liveness = liveness or Liveness()
        self.url = url
        self.timeout = timeout
        self.outage = Outage("database")
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=min(2, pool_size),
            max_size=pool_size,
            kwargs={"autocommit": True, "row_factory": dict_row, **connect_options(timeout)},
            name="mns-gateway",
            open=True,
            timeout=timeout,
            # A connection is checked before it is handed out unless it was given back just
            # now: the check is a round trip (docs/benchmarks.md#a-pooled-connections-check).
            check=liveness.check,
            reset=liveness.returned,
            # The pool retries a failed connection after 1, 2, 4, 8… s until this runs out, so a
            # long budget would leave it asleep for a minute after a minute's outage. With a
            # short one it gives up soon, and the next request asking for a connection starts a
            # fresh attempt: while the server is away, one attempt a second or so, on demand.
            reconnect_timeout=timeout,
        )
        self.notifier = PgNotifier(url, connect_options(timeout))
        if migrate:
            self.migrate()

    def _run(self, opening: Opening, work: Callable[[PgConnection], T]) -> T:
        return self._available(lambda: self._transaction(opening, work))

    def _available(self, call: Callable[[], T]) -> T:
        """``call()``, with a server that cannot serve us turned into StoreUnavailableError."""
        try:
            result = call()
        except psycopg.Error as exc:  # PoolTimeout is one too
            if is_nul_in_text(exc):
                raise MNSError("InvalidArgument", NUL_IN_TEXT) from None
            if not is_unavailable(exc):
                raise
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.outage.failed(reason)
            raise StoreUnavailableError(reason) from None
        self.outage.succeeded()
        return result

    def _transaction(self, opening: Opening, work: Callable[[PgConnection], T]) -> T:
        """``work`` in one transaction: a block (a read's, or one ``work`` asked for) that
        ``COMMIT`` ends, or else the pipeline's implicit one, which the pipeline's Sync commits."""
        with self._pool.connection() as connection:
            try:
                with connection.pipeline() as pipeline:
                    for statement in opening.statements:
                        connection.execute(statement)
                    conn = PgConnection(connection, pipeline, in_block=opening.block)
                    try:
                        result = work(conn)
                    except BaseException:
                        abandon(connection, pipeline)
                        raise
                    if conn.in_block:  # with the Sync (the pool would, a round trip later)
                        connection.execute("COMMIT")
            except BaseException:
                # A broken connection cannot roll back; the pool discards it either way.
                if connection.info.transaction_status != TransactionStatus.IDLE:
                    with contextlib.suppress(psycopg.Error):
                        connection.execute("ROLLBACK")
                raise
            return result

    def read(self, work: Callable[[PgConnection], T]) -> T:
        return self._run(_READ, work)

    def write(self, work: Callable[[PgConnection], T], *, durable: bool = True) -> T:
        if isinstance(work, SelfContained) and durable:
            return self._run_statements(work)
        return self._run(_WRITE[durable], work)

    def _run_statements(self, work: Callable[[PgConnection], T]) -> T:
        """Each statement of ``work`` a transaction of its own, but those it runs in
        ``conn.atomic()`` (see ``Database.write``): no BEGIN, no COMMIT, no pipeline, which
        cost more in psycopg than the statements."""

        def run() -> T:
            with self._pool.connection() as connection:
                return work(PgConnection(connection, None))

        return self._available(run)

    def migrate(self) -> list[int]:
        """Apply pending migrations under an advisory lock: one process at a time."""
        now_ms = int(time.time() * 1000)
        return self.write(lambda connection: apply_migrations(connection, now_ms))

    def ping(self) -> bool:
        """Whether the server answers within a fifth of ``timeout`` (what ``/readyz`` asks:
        a probe must answer before the kubelet gives up on it)."""

        def select_one() -> bool:
            with self._pool.connection(timeout=self.timeout / 5) as connection:
                return bool(connection.execute("SELECT 1 AS one").fetchone()["one"] == 1)

        try:
            return self._available(select_one)
        except (psycopg.Error, StoreUnavailableError):
            return False

    def close(self) -> None:
        self.notifier.close()
        self._pool.close()


def abandon(connection: psycopg.Connection[Any], pipeline: psycopg.Pipeline) -> None:
    """Roll back what a transaction sent so far, before the Sync that ends its pipeline: that
    Sync would commit a write's implicit transaction. Not needed once a statement failed (the
    server then discards the rest and the Sync rolls back). A connection that cannot take the
    ``ROLLBACK`` is closed, so that no Sync reaches the server: it rolls back as it goes."""
    if pipeline.status == PipelineStatus.ABORTED:
        return
    sent = False
    try:
        connection.execute("ROLLBACK")
        sent = True
    except psycopg.Error:
        pass  # the work's own exception says more
    finally:
        if not sent:
            connection.close()


def connect_options(timeout: float) -> dict[str, Any]:
    """libpq options that bound how long a connection waits for a server that went away:
    connecting (whole seconds, at least 1) and an unacknowledged packet (milliseconds)."""
    return {"connect_timeout": max(1, round(timeout)), "tcp_user_timeout": int(timeout * 1000)}


#: What a client is told when text bound for PostgreSQL carries a NUL, which it cannot store or
#: compare: the model refuses such text in what it stores (gateway.protocol.text); this covers
#: what only filters or looks up (a console filter, a list prefix), on this backend only.
NUL_IN_TEXT: Final = "Text may not contain the NUL character (U+0000)."


def is_nul_in_text(exc: BaseException) -> bool:
    """Whether psycopg refused to send text with a NUL (before the statement reached the
    server: nothing was done)."""
    return isinstance(exc, psycopg.DataError) and "NUL (0x00)" in str(exc)


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server cannot serve us (rather than that a statement failed):
    no connection in time, a connection that failed or broke (no SQLSTATE, or class 08), a
    server shutting down or starting, a read-only standby."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state in _UNAVAILABLE_STATES
