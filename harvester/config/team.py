"""``team_bank`` and ``[team]``: the PostgreSQL team bank this machine pushes to, and what it keeps back.

    team_bank = "postgresql://harvester@db.internal/team"   # or $HARVESTER_TEAM_BANK
    [team]
    host = "alice-laptop"           # the name teammates see for this machine (default: its host name)
    insecure = false                # true: no connection floor (below), libpq's own defaults
    [team.bank."coding-agent::secret"]
    push = false                    # this repository stays on this machine (what was pushed is deleted there)

The password is never written here: libpq takes it from ``~/.pgpass`` (or ``$PGPASSFILE``), from ``$PGPASSWORD``,
or from the URL itself; wherever the URL is shown (``config``, ``status``, logs, errors) its password is
masked. Checked like every other setting (harvester/config/common.py).

The connection floor (:func:`connection_floor`): whoever answers at the team bank's address is not trusted with
the password or the history. libpq's defaults send a password in clear text to any server that asks for it
that way, and go on without TLS when the server (or someone in between) declines it. So unless the URL or
libpq's environment chooses for itself, harvester adds ``require_auth=!password,!md5`` (the password goes
only inside SCRAM, GSS or SSPI, never in clear text nor as a replayable MD5 hash) and, for a server on another
machine, ``sslmode=verify-full`` (TLS, with a certificate that proves the server is the one named: libpq
looks for its authority in ``~/.postgresql/root.crt``, or ``sslrootcert=`` in the URL).
"""

from __future__ import annotations

import getpass
import os
import platform
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from harvester.config import common as c
from harvester.config.common import TEAM_BANK_ENV

HOST_ENV = "HARVESTER_HOST_NAME"
KEYS = ("bank", "host", "insecure")
BANK_KEYS = ("push",)
MASK = "*****"


@dataclass(slots=True)
class TeamSettings:
    url: str
    host: str | None = None  # None: this machine's host name
    held_banks: list[str] = field(default_factory=list)  # banks whose push = false
    insecure: bool = False  # no connection floor: libpq's defaults (see connection_floor)

    def host_name(self, env: Mapping[str, str] = os.environ) -> str:
        return self.host or env.get(HOST_ENV) or socket.gethostname() or "unknown"

    def describe(self) -> list[tuple[str, Any]]:
        return [("url", masked(self.url)), ("host", self.host or "(host name)"), ("held_banks", self.held_banks),
                ("insecure", self.insecure)]

    def connect_options(self, env: Mapping[str, str] = os.environ) -> dict[str, str]:
        """What every connection adds to the URL: the floor (see :func:`connection_floor`)."""
        return connection_floor(self.url, self.insecure, env)


FLOOR_AUTH = "!password,!md5"
REQUIRE_AUTH_LIBPQ = 160000  # the libpq version (PQlibVersion) that knows require_auth
_SOCKET_PREFIXES = ("/", "@")  # a unix socket's directory, or an abstract one (Linux)


def connection_floor(url: str, insecure: bool = False, env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The libpq parameters added to ``url`` so that the password never goes in clear text (or as MD5) to
    whoever answers, and a server on another machine is reached only over TLS with a certificate that names it.
    A parameter the URL or libpq's environment (``$PGSSLMODE``, ``$PGREQUIREAUTH``) sets is the user's choice
    and kept; a service (``service=``, ``$PGSERVICE``) keeps its own settings; ``insecure`` adds nothing.
    ``env``: the environment libpq reads (this process's)."""
    from psycopg import conninfo, pq

    if insecure:
        return {}
    try:
        params = conninfo.conninfo_to_dict(url)
    except Exception:  # libpq cannot read it: the connection will say why, in its words
        return {}
    if params.get("service") or env.get("PGSERVICE"):
        return {}
    floor = {}
    # require_auth is libpq 16's: psycopg's wheel bundles a newer one; a psycopg on an older system libpq, which
    # would refuse the unknown option (every connection would fail), goes without.
    if not params.get("require_auth") and not env.get("PGREQUIREAUTH") and pq.version() >= REQUIRE_AUTH_LIBPQ:
        floor["require_auth"] = FLOOR_AUTH
    if not params.get("sslmode") and not env.get("PGSSLMODE") and not _on_this_machine(params, env):
        floor["sslmode"] = "verify-full"
    return floor


def _on_this_machine(params: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Whether every host the URL names is this machine: a unix socket, localhost or a loopback address. A host
    is judged by its name when it has one (libpq checks a certificate against it, even with ``hostaddr``)."""
    import ipaddress

    hosts = str(params.get("host") or env.get("PGHOST") or params.get("hostaddr") or env.get("PGHOSTADDR") or "")
    for host in hosts.split(","):
        host = host.strip()
        if not host or host.startswith(_SOCKET_PREFIXES) or host.lower() == "localhost":
            continue  # empty: libpq's default, the unix socket
        try:
            if ipaddress.ip_address(host.strip("[]")).is_loopback:
                continue
        except ValueError:
            pass
        return False
    return True


def provenance(settings: TeamSettings, env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Who pushes: the host as the team sees it, the OS user, the OS, this harvester's version."""
    from harvester import __version__

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return {"host": settings.host_name(env), "os_user": user, "os": platform.system().lower(),
            "harvester_version": __version__}


_QUERY_PASSWORD = re.compile(r"(?:^|&)(?:ssl)?password=([^&]*)")  # libpq: password, sslpassword


def masked(url: str) -> str:
    """The URL with its password (if it holds one, as ``user:password@`` or as libpq's ``?password=``)
    replaced by *****."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return MASK
    if not password and not _QUERY_PASSWORD.search(parts.query):
        return url
    if password:
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{user}:{MASK}@{host}")
    query = _QUERY_PASSWORD.sub(lambda m: m.group(0)[:m.start(1) - m.start(0)] + MASK, parts.query)
    return parts._replace(query=query).geturl()


def passwords(url: str) -> set[str]:
    """The URL's passwords, as written and as libpq reads them (percent-decoded)."""
    try:
        parts = urlsplit(url)
        found = [parts.password or "", *_QUERY_PASSWORD.findall(parts.query)]
    except ValueError:
        return set()
    return {p for raw in found if raw for p in (raw, unquote(raw))}


def scrub(message: str, url: str) -> str:
    """An error message with the URL's password taken out (libpq does not print it, but a message may quote
    the URL)."""
    message = message.replace(url, masked(url))
    for password in sorted(passwords(url), key=len, reverse=True):
        message = message.replace(password, MASK)
    return message


def check_url(where: str, value: Any) -> str:
    url = c._nonempty_string(where, value, 'a PostgreSQL URL ("postgresql://user@host/db")')
    if not url.startswith(("postgresql://", "postgres://")):
        raise c._wrong_value(where, 'a postgresql:// URL', masked(url))
    try:
        urlsplit(url).port  # noqa: B018 (checks the port)
    except ValueError as exc:
        raise c.ConfigError(f"{where}: expected a postgresql:// URL, got {masked(url)!r}: {exc}") from None
    return url


def parse_team(where: str, value: Any, url: str | None) -> TeamSettings | None:
    """The ``[team]`` table (``where`` names it), with the ``team_bank`` URL; None when there is no URL.
    A ``[team]`` table without one is a mistake worth naming."""
    table = c._table(where, value, "a table") if value is not None else {}
    c._only_known_keys(where, table, KEYS)
    if url is None:
        if table:
            raise c.ConfigError(f"{where}: set team_bank (or ${TEAM_BANK_ENV}) to the PostgreSQL URL it is for")
        return None
    s = TeamSettings(url=url)
    if "insecure" in table:
        s.insecure = c._boolean(f"{where}.insecure", table["insecure"])
    if "host" in table:
        s.host = c._nonempty_string(f"{where}.host", table["host"], "a host name")
    if "bank" in table:
        banks = c._table(f"{where}.bank", table["bank"], 'a table of "bank id" = { push = ... }')
        for bank, options in banks.items():
            here = f'{where}.bank."{bank}"'
            options = c._table(here, options, "a table")
            c._only_known_keys(here, options, BANK_KEYS)
            if "push" in options and not c._boolean(f"{here}.push", options["push"]):
                s.held_banks.append(bank)
    return s
