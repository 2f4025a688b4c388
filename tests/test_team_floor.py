"""The team bank's connection floor (harvester/config/team.py: connection_floor): libpq never sends the password
in clear text (or as MD5) to whoever answers, and never talks to a team bank on another machine without TLS
and a certificate that proves who it is, unless the URL (or libpq's environment) says otherwise or
``[team] insecure = true``.

Against a real PostgreSQL (a cluster of its own, tests/services.py) whose pg_hba asks some roles for a
cleartext password or MD5 and others for SCRAM; and against an impostor: a socket that speaks just enough of
PostgreSQL's protocol to ask for the password in clear text, and records every byte it is sent.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import services
from tests.machine import harvester_env

PASSWORD = "Sw0rdfish-" + "impostor"  # built: no literal secret in the repository
FLOOR_AUTH = "!password,!md5"


# -- what is added to which URL ------------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "env", "insecure", "expected"), [
    ("postgresql://u@/team?host=/run/pg", {}, False, {"require_auth": FLOOR_AUTH}),  # a unix socket
    ("postgresql://u@/team", {}, False, {"require_auth": FLOOR_AUTH}),  # libpq's default: a unix socket
    ("postgresql://u@localhost/team", {}, False, {"require_auth": FLOOR_AUTH}),
    ("postgresql://u@127.0.0.1:5433/team", {}, False, {"require_auth": FLOOR_AUTH}),
    ("postgresql://u@[::1]/team", {}, False, {"require_auth": FLOOR_AUTH}),
    ("postgresql://u@db.example/team", {}, False, {"require_auth": FLOOR_AUTH, "sslmode": "verify-full"}),
    ("postgresql://u@localhost,db.example/team", {}, False, {"require_auth": FLOOR_AUTH, "sslmode": "verify-full"}),
    ("postgresql://u@db.example/team?hostaddr=127.0.0.1", {}, False,
     {"require_auth": FLOOR_AUTH, "sslmode": "verify-full"}),  # the certificate is checked against db.example
    ("postgresql://u@/team", {"PGHOST": "db.example"}, False, {"require_auth": FLOOR_AUTH, "sslmode": "verify-full"}),
    # What the URL or libpq's environment says is the user's choice.
    ("postgresql://u@db.example/team?sslmode=require", {}, False, {"require_auth": FLOOR_AUTH}),
    ("postgresql://u@db.example/team?require_auth=password&sslmode=verify-full", {}, False, {}),
    ("postgresql://u@db.example/team", {"PGSSLMODE": "disable", "PGREQUIREAUTH": "md5"}, False, {}),
    ("postgresql://u@db.example/team?service=team", {}, False, {}),  # pg_service.conf holds its settings
    ("postgresql://u@db.example/team", {}, True, {}),  # [team] insecure = true
])
def test_the_floor_adds_what_the_url_leaves_unsaid(url: str, env: dict[str, str], insecure: bool,
                                                   expected: dict[str, str]) -> None:
    from harvester.config.team import connection_floor

    assert connection_floor(url, insecure, env) == expected


# -- a real server -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pg(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A cluster of its own: its pg_hba asks ``clear`` for a cleartext password, ``hashed`` for MD5, ``scram``
    for SCRAM (the rest: trust, on the unix socket, as every test server)."""
    services.require(request)
    with services.running_postgres() as server:
        server.psql(f"CREATE ROLE clear LOGIN PASSWORD '{PASSWORD}'")
        server.psql(f"CREATE ROLE scram LOGIN PASSWORD '{PASSWORD}'")
        server.psql(f"SET password_encryption = 'md5'; CREATE ROLE hashed LOGIN PASSWORD '{PASSWORD}'")
        for role in ("clear", "scram", "hashed"):
            server.psql(f"CREATE DATABASE floor_{role} OWNER {role}")
        hba = server.data_dir / "pg_hba.conf"
        hba.write_text("local all clear password\nlocal all hashed md5\nlocal all scram scram-sha-256\n"
                       + hba.read_text())
        server.psql("SELECT pg_reload_conf()")
        yield server


def _push(tmp: Path, url: str, config: str = "") -> subprocess.CompletedProcess:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "home").mkdir(exist_ok=True)
    (tmp / "config.toml").write_text(config)
    env = {k: v for k, v in harvester_env(tmp).items() if not k.startswith("PG")}
    env["HARVESTER_TEAM_BANK"] = url
    return subprocess.run([sys.executable, "-m", "harvester", "team", "push"], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp, stdin=subprocess.DEVNULL)


def _url(pg: Any, role: str, extra: str = "") -> str:
    return f"postgresql://{role}:{PASSWORD}@/floor_{role}?host={pg.socket_dir}{extra}"


@pytest.mark.parametrize("role", ["clear", "hashed"])
def test_a_server_asking_for_the_password_in_clear_or_as_md5_is_refused_in_one_line(pg: Any, tmp_path: Path,
                                                                                     role: str) -> None:
    done = _push(tmp_path, _url(pg, role))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and PASSWORD not in done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("stopped: ")]
    assert "server requested" in line and "[team] insecure" in line, line


def test_scram_passes_the_floor(pg: Any, tmp_path: Path) -> None:
    done = _push(tmp_path, _url(pg, "scram"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_url_or_insecure_true_chooses_otherwise(pg: Any, tmp_path: Path) -> None:
    assert _push(tmp_path / "url", _url(pg, "clear", "&require_auth=password")).returncode == 0
    done = _push(tmp_path / "insecure", _url(pg, "hashed"), "[team]\ninsecure = true\n")
    assert done.returncode == 0, done.stdout + done.stderr


# -- an impostor ---------------------------------------------------------------------------------------------

class Impostor:
    """A socket on 127.0.0.1 that answers PostgreSQL's opening: "no" to TLS and GSS encryption, then asks for the
    password in clear text. ``received``: every byte any client sent it."""

    SSL_REQUEST, GSS_REQUEST = 80877103, 80877104

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = bytearray()
        self.startups = 0  # startup messages: user and database names sent in the open
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError
            self.received += chunk
            data += chunk
        return data

    def _talk(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:  # the opening: length, then code (a request) or protocol version (the startup)
                    length, code = struct.unpack("!ii", self._read(conn, 8))
                    self._read(conn, length - 8)
                    if code in (self.SSL_REQUEST, self.GSS_REQUEST):
                        conn.sendall(b"N")
                        continue
                    self.startups += 1
                    break
                conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
                kind = self._read(conn, 1)
                (length,) = struct.unpack("!i", self._read(conn, 4))
                self._read(conn, length - 4)
                if kind == b"p":
                    error = b"SFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00"
                    conn.sendall(b"E" + struct.pack("!i", len(error) + 4) + error)
            except (OSError, ConnectionError, struct.error):
                return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def impostor() -> Iterator[Impostor]:
    server = Impostor()
    yield server
    server.close()


def test_an_impostor_on_this_machine_never_gets_the_password(impostor: Impostor, tmp_path: Path) -> None:
    done = _push(tmp_path, f"postgresql://alice:{PASSWORD}@127.0.0.1:{impostor.port}/team")
    assert done.returncode == 1, done.stdout + done.stderr
    assert impostor.startups >= 1  # it was asked: a local server may go without TLS
    assert PASSWORD.encode() not in impostor.received


def test_an_impostor_for_a_server_elsewhere_gets_nothing_without_tls(impostor: Impostor, tmp_path: Path) -> None:
    """db.team.invalid is another machine's name (libpq goes to hostaddr and checks the certificate against the
    name): without TLS it is not even told who connects, to which database."""
    url = f"postgresql://alice:{PASSWORD}@db.team.invalid:{impostor.port}/team?hostaddr=127.0.0.1"
    done = _push(tmp_path, url)
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("stopped: ")]
    assert "SSL" in line and "sslmode" in line, line
    assert impostor.startups == 0 and b"alice" not in impostor.received
    assert PASSWORD.encode() not in impostor.received


def test_insecure_true_is_libpqs_own_defaults(impostor: Impostor, tmp_path: Path) -> None:
    """The opt-out does what it says: the password goes to whoever asks for it (the reason for the floor)."""
    url = f"postgresql://alice:{PASSWORD}@db.team.invalid:{impostor.port}/team?hostaddr=127.0.0.1"
    done = _push(tmp_path, url, "[team]\ninsecure = true\n")
    assert done.returncode == 1 and PASSWORD.encode() in impostor.received
