"""The team bank's server: a psycopg connection pool to PostgreSQL (reopened after the server was away), its schema
migrated on first use (harvester/team/schema.py), this machine's row written once per pool. What pushes
(push.py) and what reads (read.py) both go through :class:`TeamBank`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from harvester.config.team import TeamSettings


class Unreachable(Exception):
    """The team bank cannot be reached (connection refused, timed out, lost)."""


class Refused(Unreachable):
    """The team bank answers but takes no push from this harvester (its schema is newer, or this role may not
    create it): the pass stops as when the server is away, with the server's reason."""


T = TypeVar("T")
CONNECT_SECONDS = 10.0
RETRIES = 3  # a transaction PostgreSQL rolled back to break a deadlock or a serialization conflict


def _log() -> Any:
    """The logger, got when the push logs (reading commands read the team bank through this module, and log
    nothing: structlog stays unimported)."""
    from harvester.log import get_logger

    return get_logger("harvester.team")


class TeamBank:
    """The team bank's server: a psycopg connection pool (reopened after the server was away), the schema
    migrated on first use, this machine's row written once per pool."""

    def __init__(self, settings: TeamSettings, env: Mapping[str, str] = os.environ, max_size: int = 2) -> None:
        from harvester.config.team import provenance

        self.settings, self.env, self.max_size = settings, env, max_size
        self.provenance = provenance(settings, env)
        self._pool: Any = None
        self._ready: str | None = None  # the machine whose row was written on this pool

    def scrub(self, message: str) -> str:
        from harvester.config.team import scrub

        return scrub(message, self.settings.url)

    def _open(self) -> Any:
        import logging

        import psycopg
        from psycopg_pool import ConnectionPool, PoolTimeout

        if self._pool is not None:
            return self._pool
        # One connection first: a server that refuses (down, no such database) is said at once in libpq's words;
        # the pool would try again in the background until its timeout, then say only that it timed out.
        floor = self.settings.connect_options(os.environ)  # what libpq reads: this process's environment
        try:
            psycopg.connect(self.settings.url, connect_timeout=int(CONNECT_SECONDS),
                            application_name="harvester", **floor).close()
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None
        # The pool's own warnings would repeat what the push records (and logs once) as the server's absence.
        logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
        pool = ConnectionPool(self.settings.url, min_size=1, max_size=self.max_size, open=False, name="harvester-team",
                              kwargs={"autocommit": True, "application_name": "harvester",
                                      "connect_timeout": int(CONNECT_SECONDS), **floor},
                              check=ConnectionPool.check_connection, timeout=CONNECT_SECONDS)
        try:
            pool.open(wait=True, timeout=CONNECT_SECONDS)
        except PoolTimeout:
            pool.close(timeout=0)
            raise self._unreachable(None) from None
        self._pool = pool
        return pool

    def _unreachable(self, exc: BaseException | None) -> Exception:
        """Why the server cannot be reached, in libpq's words (a pool timeout says only that it timed out)."""
        reason = str(exc) if exc is not None else ""
        if not reason or "couldn't get a connection" in reason:
            import psycopg

            try:
                psycopg.connect(self.settings.url, connect_timeout=5, **self.settings.connect_options(os.environ)).close()
            except psycopg.Error as probe:
                reason = str(probe)
            else:
                reason = reason or "no connection within the time allowed"
        first = reason.strip().splitlines()[0] if reason.strip() else "unreachable"
        return Unreachable(self.scrub(first + _floor_hint(first, self.settings.connect_options(os.environ))))

    def close(self) -> None:
        if self._pool is not None:
            with contextlib.suppress(Exception):
                self._pool.close(timeout=1)
            self._pool = None
            self._ready = None

    def connection(self) -> Any:
        """A connection of the pool (a context manager), for reading."""
        from psycopg_pool import PoolTimeout

        pool = self._open()
        try:
            return pool.connection()
        except PoolTimeout:
            self.close()
            raise self._unreachable(None) from None

    def run(self, work: Callable[[Any], T]) -> T:
        """``work(conn)`` in one transaction, again (up to RETRIES) when PostgreSQL rolled it back to break a
        deadlock or a serialization conflict. A lost or refused connection is :class:`Unreachable`; other
        errors (the server refused the rows) go to the caller."""
        import psycopg
        from psycopg import errors
        from psycopg_pool import PoolTimeout

        for attempt in range(RETRIES + 1):
            try:
                pool = self._open()
                with pool.connection() as conn, conn.transaction():
                    return work(conn)
            except errors.TransactionRollback:
                if attempt == RETRIES:
                    raise
            except PoolTimeout:
                self.close()
                raise self._unreachable(None) from None
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if not _lost(exc):
                    raise  # the server refused these rows (a limit, a canceled statement): the caller's to settle
                self.close()  # a new pool next time: the server may come back on another address's terms
                raise self._unreachable(exc) from None
        raise AssertionError("unreachable")

    def ready(self, machine: str) -> int:
        """The schema migrated (or refused when newer) and this machine's row, once per pool. Returns the schema
        version."""
        import psycopg

        from harvester.team import schema

        if self._ready == machine:
            return len(schema.MIGRATIONS)
        try:
            number = self._connected(schema.migrate)
            self._machine_row(machine)
        except schema.TeamSchemaNewer as exc:
            raise Refused(str(exc)) from None
        except psycopg.Error as exc:  # the server answers, and refuses: a role that may not create the schema
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise Refused(self.scrub(f"the team bank refuses to set up its schema: {reason}")) from None
        self._ready = machine
        return number

    def _machine_row(self, machine: str) -> None:
        from harvester.team import schema

        p = self.provenance
        self.run(lambda conn: conn.execute(
            f"INSERT INTO {schema.SCHEMA}.machines (id, host, os_user, os, harvester_version) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET host = excluded.host, "
            "os_user = excluded.os_user, os = excluded.os, harvester_version = excluded.harvester_version "
            f"WHERE ({schema.SCHEMA}.machines.host, {schema.SCHEMA}.machines.os_user, {schema.SCHEMA}.machines.os, "
            f"{schema.SCHEMA}.machines.harvester_version) IS DISTINCT FROM (excluded.host, excluded.os_user, "
            "excluded.os, excluded.harvester_version)",
            (machine, p["host"], p["os_user"], p["os"], p["harvester_version"])))

    def _connected(self, work: Callable[[Any], T]) -> T:
        """``work(conn)`` on a pooled connection outside any transaction of ours (migrate makes its own)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._open().connection() as conn:
                return work(conn)
        except PoolTimeout:
            self.close()
            raise self._unreachable(None) from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if not _lost(exc):
                raise
            self.close()
            raise self._unreachable(exc) from None

    def check_schema(self) -> int:
        """The server's schema version, refused (TeamSchemaNewer) when newer than this harvester's; for readers,
        which never migrate."""
        from harvester.team import schema

        number = self._connected(schema.version)
        if number > len(schema.MIGRATIONS):
            raise schema.TeamSchemaNewer(number, len(schema.MIGRATIONS))
        return number


def _floor_hint(reason: str, floor: dict[str, str]) -> str:
    """What to do when the connection floor (team/config.py: connection_floor) is what refused the server."""
    if "require_auth" in floor and "authentication method requirement" in reason:
        return (" (harvester sends the password only inside SCRAM, never in clear text nor as MD5: let the server "
                "use scram-sha-256, or choose with require_auth= in team_bank's URL, or [team] insecure = true)")
    if "sslmode" in floor and ("SSL" in reason or "certificate" in reason):
        return (" (a team bank on another machine is reached over TLS with a verified certificate: put its authority"
                " in ~/.postgresql/root.crt or sslrootcert= in team_bank's URL, or choose with sslmode=)")
    return ""


def _lost(exc: Exception) -> bool:
    """Whether an error says the server is away (the connection failed, was lost or closed; the server shuts down
    or lacks the resources to serve), not that it refused what it was sent: that costs those rows alone."""
    import psycopg

    state = getattr(exc, "sqlstate", None)
    return isinstance(exc, psycopg.InterfaceError) or state is None or state.startswith(("08", "53", "57P"))
