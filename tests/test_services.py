"""The real services the suite starts (tests/services.py) answer, keep their data across a restart, and
leave nothing behind."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests import services

BANK = "coding-agent::demo"


def _select(uri: str, sql: str) -> str:
    """The first column of the first row, through psycopg when this venv has it, else psycopg2 (the services
    venv has it for Hindsight's migrations): either way libpq, given the URI a client would get."""
    try:
        import psycopg
    except ImportError:
        code = "import sys, psycopg2; cur = psycopg2.connect(sys.argv[1]).cursor(); cur.execute(sys.argv[2]); print(cur.fetchone()[0])"
        argv = [str(services.VENV / "bin" / "python"), "-c", code, uri, sql]
        return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    with psycopg.connect(uri) as conn:
        row = conn.execute(sql).fetchone()
        assert row is not None
        return str(row[0])


def _http(method: str, url: str, body: object = None, token: str | None = None) -> tuple[int, Any]:
    headers = {"content-type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def _bank(server: services.Hindsight, bank: str = BANK) -> str:
    return f"{server.url}/v1/default/banks/{urllib.parse.quote(bank, safe='')}"


def _retain(server: services.Hindsight, document_id: str, text: str, token: str | None = None) -> None:
    item = {"content": text, "document_id": document_id, "tags": ["agent:claude"], "metadata": {"agent": "claude"}}
    status, body = _http("POST", f"{_bank(server)}/memories", {"items": [item], "async": False}, token)
    assert (status, body["success"], body["items_count"]) == (200, True, 1), body


def test_postgres_answers_with_pgvector(postgres_server: services.Postgres) -> None:
    uri = postgres_server.uri("services_check")
    assert uri == f"postgresql://postgres@/services_check?host={postgres_server.socket_dir}"
    assert _select(uri, "select version()").startswith("PostgreSQL 18.")
    postgres_server.psql("create extension if not exists vector", "services_check")
    assert _select(uri, "select extversion from pg_extension where extname = 'vector'").startswith("0.8.")
    assert (postgres_server.socket_dir / ".s.PGSQL.5432").is_socket()
    assert postgres_server.pid in postgres_server.pids and len(postgres_server.pids) > 1


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_stop_start_keeps_data(postgres_server: services.Postgres, mode: str) -> None:
    """Issue 15 stops the server mid-push: committed rows survive a fast stop and a crash-like one."""
    uri = postgres_server.uri(f"keep_{mode}")
    postgres_server.psql("create table t (n int); insert into t values (42)", f"keep_{mode}")
    before = postgres_server.pids
    postgres_server.stop(mode=mode)
    try:
        assert postgres_server.pids == [] and not any(services._alive(p) for p in before)
        with pytest.raises(RuntimeError, match="socket"):
            postgres_server.psql("select 1")
    finally:
        postgres_server.start()
    assert postgres_server.pid not in before
    assert _select(uri, "select n from t") == "42"


def test_a_cluster_leaves_nothing_behind() -> None:
    with services.running_postgres() as pg:
        root, pids = pg.root, pg.pids
        assert pg.psql("select 1").strip() == "1"
    assert pids and not any(services._alive(p) for p in pids)
    assert not root.exists()


def test_hindsight_health_and_version(hindsight_server: services.Hindsight) -> None:
    status, health = _http("GET", f"{hindsight_server.url}/health")
    assert (status, health["status"], health["database"]) == (200, "healthy", "connected")
    status, version = _http("GET", f"{hindsight_server.url}/v1/version")
    assert (status, version["api_version"]) == (200, "1.1.0")
    assert hindsight_server.log_path.is_file() and hindsight_server.pid is not None


def test_a_retain_lands_as_a_document(hindsight_server: services.Hindsight) -> None:
    text = "user: How do I run the tests?\nassistant: `bash .ci/run`."
    _retain(hindsight_server, "claude:services-check", text)
    status, doc = _http("GET", f"{_bank(hindsight_server)}/documents/claude%3Aservices-check")
    assert status == 200
    assert (doc["original_text"], doc["tags"], doc["document_metadata"]) == (text, ["agent:claude"], {"agent": "claude"})
    status, listed = _http("GET", f"{_bank(hindsight_server)}/documents?q=services-check")
    assert [d["id"] for d in listed["items"]] == ["claude:services-check"]


def test_hindsight_restart_keeps_documents(hindsight_server: services.Hindsight) -> None:
    _retain(hindsight_server, "claude:survives-restart", "before the restart")
    old_pid = hindsight_server.pid
    hindsight_server.stop()
    try:
        assert hindsight_server.pid is None
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{hindsight_server.url}/health", timeout=5)
    finally:
        hindsight_server.start()
    assert hindsight_server.pid not in (None, old_pid)
    status, doc = _http("GET", f"{_bank(hindsight_server)}/documents/claude%3Asurvives-restart")
    assert (status, doc["original_text"]) == (200, "before the restart")


def test_hindsight_with_a_token_refuses_requests_without_it(request: pytest.FixtureRequest) -> None:
    """How a sink test checks that the token is sent: a server of its own that requires one."""
    services.require(request)
    with services.running_hindsight(api_key="s3cret") as server:
        root, pids = server.root, [server.pid]
        assert _http("GET", f"{server.url}/v1/default/banks") == (
            401, {"detail": "Authentication failed: Invalid API key"})  # fmt: skip
        assert _http("GET", f"{server.url}/v1/default/banks", token="wrong")[0] == 401
        _retain(server, "claude:with-token", "sent with the token", token="s3cret")
        assert _http("GET", f"{_bank(server)}/documents/claude%3Awith-token", token="s3cret")[0] == 200
    assert not any(services._alive(p) for p in pids if p) and not root.exists()


def test_no_services_skips_outside_ci_and_fails_in_it(request: pytest.FixtureRequest,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv(services.NO_SERVICES, "1")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="HARVESTER_NO_SERVICES=1"):
        services.require(request)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI never skips"):
        services.require(request)
