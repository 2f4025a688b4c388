"""Other versions' and other readers' layouts of the core agents (issue 30): every text of each variant is kept.

Each case is a fixture tree under ``fixtures/<agent>/variants/<name>/`` (its ``SOURCE.md`` says which version
or which third-party reader wrote that shape, and where the agent's own source defines it). A case lists the
texts a reader must keep; the test scans the tree into a fresh bank and finds each of them in the events.
What no reader knows stays drift: the case lists the drift it must report, and nothing else may be.
The same count, beside agentsview's on the same trees: ``python bench/bench_variants.py``.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import FIXTURES, events_of, scan
from tests.test_parser_properties import EXAMPLES, Call, _mutated


def _env(variable: str) -> Callable[[Path, Path], dict[str, str]]:
    return lambda tree, home: {variable: str(tree)}


def _home_dir(relative: str) -> Callable[[Path, Path], dict[str, str]]:
    """The tree is ``~/<relative>`` (no variable moves it)."""
    def place(tree: Path, home: Path) -> dict[str, str]:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).symlink_to(tree, target_is_directory=True)
        return {}
    return place


def _dot_gemini(tree: Path, home: Path) -> dict[str, str]:
    """The tree is ``~/.gemini`` (``$GEMINI_CLI_HOME`` names the folder holding it)."""
    (home / ".gemini").symlink_to(tree, target_is_directory=True)
    return {}


def _xdg_data(app: str) -> Callable[[Path, Path], dict[str, str]]:
    """The tree is ``$XDG_DATA_HOME/<app>``."""
    def place(tree: Path, home: Path) -> dict[str, str]:
        (home / "data").mkdir()
        (home / "data" / app).symlink_to(tree, target_is_directory=True)
        return {"XDG_DATA_HOME": str(home / "data")}
    return place


@dataclass(frozen=True)
class Case:
    harness: str
    tree: str  # fixtures/<tree>
    place: Callable[[Path, Path], dict[str, str]]
    texts: tuple[str, ...]  # each must be found in some event's text
    drift: tuple[str, ...] = ()  # details of the unknown_type problems it must report, and no other
    sessions: int = 1
    fields: tuple[str, ...] = field(default=())  # details of unknown_field problems it must report
    cwd: str | None = None  # every session's working directory, when the variant records one
    events: int | None = None  # how many events in all, where a reader could read one message twice


CASES: dict[str, Case] = {
    # agentsview's Codex fixtures: messages without "type", dict arguments, a call known only by its summary.
    "codex/agentsview": Case("codex", "codex/variants/agentsview", _env("CODEX_HOME"), (
        "Find where the retry budget is configured",
        "rg -n retry_budget",
        "src/net/client.rs:41: retry_budget: 3",
        "pty-7",
        "Running the network tests",
        "The retry budget is set in src/net/client.rs, line 41.",
    )),
    # cass's Codex fixtures: a chat-completions function_call inside a message, a "function" role message;
    # its event_msg "tool_call" was never written by Codex: drift.
    "codex/cass": Case("codex", "codex/variants/cass", _env("CODEX_HOME"), (
        "Which modules import the cache?",
        "grep -rl 'import cache' src",
        "src/api.py\nsrc/worker.py",
        "Two modules import it: src/api.py and src/worker.py.",
    ), drift=("event_msg='tool_call'",)),
    # opencode 0.1 (June 2025): messages with their parts inline (Message.Info), under project/<dir>/storage/
    # session/{info,message}; the "global" project (outside git) was never migrated.
    "opencode/v1-global": Case("opencode", "opencode/variants/v1-global", _xdg_data("opencode"), (
        "Why does fetch_all retry forever when the server returns 429?",
        "client.py",
        "The loop only breaks on 2xx; a 429 falls through to the sleep branch.",
        "/tmp/scratch/client.py",
        "00042|         if resp.status == 200: break",
        "RFC 6585: 429 Too Many Requests",
        "honour Retry-After and cap the attempts.",
    ), cwd="/tmp/scratch"),
    # opencode 0.3 (July 2025): MessageV2 headers and parts in files of their own, still under project/<dir>/.
    "opencode/v2-project": Case("opencode", "opencode/variants/v2-project", _xdg_data("opencode"), (
        "deploy.sh hangs when the registry is down; add a 30 second timeout to the push.",
        "/home/dev/src/demo-repo/deploy.sh",
        "Edited deploy.sh: 1 line changed",
        "The push now gives up after 30 seconds with exit status 124",
    ), cwd="/home/dev/src/demo-repo"),
    # The same 0.1 messages after Storage's first migration copied them into storage/message/ unchanged.
    "opencode/v1-migrated": Case("opencode", "opencode/variants/v1-migrated", _xdg_data("opencode"), (
        "Rename load_cfg to load_config everywhere.",
        "grep: load_cfg",
        "src/app.py:3\nsrc/cli.py:7",
        "/home/dev/src/demo-repo/src/app.py",
        "Two files call load_cfg: src/app.py and src/cli.py.",
        "MessageAbortedError",
    ), cwd="/home/dev/src/demo-repo"),
    # agentsview's Qwen fixtures: a tool's function response in a "user" record (Qwen writes "tool_result").
    "qwen-code/user-function-response": Case("qwen-code", "qwen_code/variants/user-function-response",
                                             _env("QWEN_HOME"), (
        "Show me the retry loop in client.py",
        "/home/dev/src/demo-repo/client.py",
        "while True:\n    if resp.status == 200: break",
        "The loop only exits on a 200.",
    )),
    # /chat save: tmp/<hash>/checkpoint-<tag>.json, the model's history (before 0.1: the only saved chat).
    "qwen-code/checkpoint": Case("qwen-code", "qwen_code/variants/checkpoint", _env("QWEN_HOME"), (
        "Draft release notes from the commits since v0.4.0.",
        "I need the commit list first.",
        "git log --oneline v0.4.0..HEAD",
        "a1b2c3d Add retry budget\nd4e5f6a Fix 429 loop",
        "a 429 no longer loops forever.",
        "List the modules that import the cache.",
        "src/api.py and src/worker.py import it.",
    ), sessions=2, cwd="/home/dev/src/demo-repo"),
    "gemini-cli/checkpoint": Case("gemini-cli", "gemini_cli/variants/checkpoint", _dot_gemini, (
        "Where does the OAuth callback store the refresh token?",
        "refresh_token",
        "src/auth/callback.ts:58: store.set('refresh_token', tokens.refresh_token)",
        "In src/auth/callback.ts line 58, through the key store.",
    ), cwd="/home/dev/src/demo-repo"),
    # TraeX 0.200 (TRAE CLI, a codex-rs fork, read by the Codex parser): items appended by "history_mutation".
    "traex/history-mutation": Case("traex", "traex/variants/history-mutation", _home_dir(".trae/cli"), (
        "Why does the health check time out?",
        "I will look at the handler first.",
        "rg -n healthz src",
        "src/health.rs:12: sleep(Duration::from_secs(30))",
        "The handler sleeps 30 seconds before answering; the probe gives up after 10.",
    ), cwd="/home/user/code/api"),
    # Hermes current builds: what the store refused, diverted into sessions/<id>.jsonl beside state.db (the rest
    # of a turn, and a session the replacement store never knew); the gateway's copy of a stored session is not
    # read twice (11 events: 3 rows and 2 diverted lines, 4 diverted lines, 2 rows).
    "hermes/diverted": Case("hermes", "hermes/variants/diverted", _env("HERMES_HOME"), (
        "Why does the nightly export stop at 10,000 rows?",
        "LIMIT 10000",
        "src/export/query.py:88:    sql += ' LIMIT 10000'",
        "src/export/query.py line 88 appends LIMIT 10000 to every export query; remove it or page the export.",
        "Rotate the staging API key and tell me where it is used.",
        "rg -l STAGING_API_KEY",
        "deploy/staging.env\\nservices/billing/config.py",
        "It is read in deploy/staging.env and services/billing/config.py.",
        "Yes: the 07:55 staging deploy passed its checks.",
    ), sessions=3, events=11),
    # cass's Gemini fixture: a whole-document session whose answers are typed "model" (Gemini writes "gemini").
    "gemini-cli/cass": Case("gemini-cli", "gemini_cli/variants/cass", _dot_gemini, (
        "Which port does the dev server listen on?",
        "Port 5173, set in vite.config.ts.",
    ), cwd="/home/dev/src/demo-repo"),
}


def read_case(case: Case, tmp: Path) -> tuple[list[dict], list[tuple[str, str]], int]:
    """(events, (kind, detail) of each problem, sessions) of the case's tree scanned into a fresh bank; checks the
    sessions' cwd on the way."""
    home = tmp / "home"
    home.mkdir(parents=True)
    env = {"HOME": str(home), **case.place(FIXTURES / case.tree, home)}
    bank = tmp / "bank.sqlite"
    scan(home, bank, (case.harness,), env=env)
    events = events_of(bank)
    with sqlite3.connect(bank) as conn:
        problems = [(k, d) for k, d in conn.execute("SELECT kind, detail FROM problems ORDER BY id")]
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        if case.cwd:
            assert {c for (c,) in conn.execute("SELECT cwd FROM sessions")} == {case.cwd}
    return events, problems, sessions


def kept(case: Case, events: list[dict]) -> list[str]:
    """The case's texts that some event holds."""
    return [t for t in case.texts if any(t in (e["text"] or "") for e in events)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_text_of_the_variant_is_kept(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    events, problems, sessions = read_case(case, tmp_path)
    assert sessions == case.sessions
    assert case.events is None or len(events) == case.events
    assert [t for t in case.texts if t not in kept(case, events)] == []
    assert sorted(d for k, d in problems if k == "unknown_type") == sorted(case.drift)
    assert sorted(d for k, d in problems if k == "unknown_field") == sorted(case.fields)
    assert [p for p in problems if p[0] not in ("unknown_type", "unknown_field")] == []




def test_a_field_no_codex_version_wrote_is_drift_once_per_read() -> None:
    from pathlib import PurePath

    from harvester.parsers import codex
    from harvester.parsers.base import Record, SourceRef

    call = {"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": "{}",
            "shell_environment": {"TERM": "xterm"}}
    lines = [b'{"timestamp":"2026-12-01T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}']
    lines += [orjson.dumps({"timestamp": "2026-12-01T10:00:01Z", "type": "response_item",
                            "payload": {**call, "call_id": f"c{n}"}}) for n in range(3)]
    ref = SourceRef(PurePath("/c/sessions/rollout-x.jsonl"), PurePath("/c"))
    batch = codex.parse(ref, [Record(i + 1, line) for i, line in enumerate(lines)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("unknown_field", 2, "response_item function_call fields: shell_environment")]
    assert len([e for e in batch.events if e.kind == "tool_call"]) == 3  # the calls are still read


def test_an_opencode_project_tree_and_its_migrated_copy_are_one_session(tmp_path: Path) -> None:
    """Storage's first migration copies a project's tree into storage/ and leaves the original: read once."""
    import shutil

    data = tmp_path / "data" / "opencode"
    shutil.copytree(FIXTURES / "opencode" / "variants" / "v1-global", data)
    old = data / "project" / "global" / "storage" / "session"
    info = next((old / "info").glob("*.json"))
    (data / "storage" / "session" / "p1").mkdir(parents=True)
    shutil.copy(info, data / "storage" / "session" / "p1" / info.name)
    shutil.copytree(old / "message" / info.stem, data / "storage" / "message" / info.stem)
    home = tmp_path / "home"
    home.mkdir()
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("opencode",), env={"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "data")})
    events = events_of(bank)
    with sqlite3.connect(bank) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    assert len(events) == 7 and len({(e["role"], e["kind"], e["text"]) for e in events}) == 7



def test_a_saved_chat_files_the_agents_own_context_as_injected_never_as_the_users_words() -> None:
    from pathlib import PurePath

    from harvester.parsers import gemini_cli
    from harvester.parsers.base import Record, SourceRef

    history = [{"role": "user", "parts": [{"text": "<session_context>\nThis is the Gemini CLI. (shortened)"}]},
               {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
               {"role": "user", "parts": [{"text": "rename the flag"}]}]
    ref = SourceRef(PurePath("/g/tmp/demo/checkpoint-x.json"), PurePath("/g"), "checkpoint")
    batch = gemini_cli.parse(ref, [Record(1, orjson.dumps({"history": history}))], {})
    assert [(e.role, e.text[:18]) for e in batch.events] == [
        ("system", "<session_context>\n"), ("system", "Got it. Thanks for"), ("user", "rename the flag")]



def test_a_field_no_qwen_version_wrote_is_drift_once_per_read() -> None:
    from pathlib import PurePath

    from harvester.parsers import qwen_code
    from harvester.parsers.base import Record, SourceRef

    record = {"uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp": "2026-12-01T10:00:00.000Z",
              "type": "user", "cwd": "/w", "version": "0.30.0", "message": {"role": "user", "parts": [{"text": "hi"}]},
              "replyTo": "u0"}
    lines = [orjson.dumps({**record, "uuid": f"u{n}"}) for n in range(1, 4)]
    ref = SourceRef(PurePath("/q/projects/-w/chats/0f0e0d0c-0b0a-4909-8807-060504030201.jsonl"), PurePath("/q"))
    batch = qwen_code.parse(ref, [Record(i + 1, line) for i, line in enumerate(lines)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [("unknown_field", 1, "user record fields: replyTo")]
    assert [e.text for e in batch.events] == ["hi", "hi", "hi"]


def test_a_field_no_opencode_version_wrote_on_a_part_is_drift_once_per_read() -> None:
    """opencode's parts (MessageV2: text, tool, step-finish ...) and a tool part's state are checked field by field
    as Codex's response items are (``PART_FIELDS`` in harvester/parsers/opencode_parts.py)."""
    from pathlib import PurePath

    from harvester.parsers import opencode
    from harvester.parsers.base import Record, SourceRef

    message = orjson.dumps({"role": "assistant", "modelID": "m", "time": {"created": 1}}).decode()
    text = {"type": "text", "text": "hi", "time": {"start": 1}, "glow": 1}
    tool = {"type": "tool", "callID": "c", "tool": "bash", "state": {
        "status": "completed", "input": {"command": "ls"}, "output": "a", "title": "ls", "metadata": {},
        "time": {"start": 1, "end": 2}, "exitSignal": 9}}
    rows = [{"table": "part", "row": {"id": f"prt_{n}", "message_id": "msg_1", "session_id": "ses_1",
                                      "data": orjson.dumps(part).decode(), "message": message, "message_time": 1}}
            for n, part in enumerate([text, text, tool, {"type": "step-start", "snapshot": "abc"}])]
    ref = SourceRef(PurePath("/o/opencode.db"), PurePath("/o"), "db")
    batch = opencode.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert sorted((p.kind, p.detail) for p in batch.problems) == [
        ("unknown_field", "text part fields: glow"), ("unknown_field", "tool part state completed fields: exitSignal")]
    assert [e.text for e in batch.events if e.kind == "text"] == ["hi", "hi"]


# -- every field of every variant, any value: reading never stops (as tests/test_parser_properties.py does for the
# hand-written stores, on these trees' records) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def variant_calls(tmp_path_factory: pytest.TempPathFactory) -> list[Call]:
    """What each variant's parser was given when its tree was scanned."""
    from dataclasses import replace

    from harvester.parsers import HARNESSES

    seen: list[Call] = []
    originals = dict(HARNESSES)

    def recording(name: str):  # type: ignore[no-untyped-def]
        parse = originals[name].parse

        def parse_and_note(ref, records, state):  # type: ignore[no-untyped-def]
            records = list(records)
            if records and not state:
                seen.append(Call(name, ref, tuple(records), ref.path.suffix != ".json"))
            return parse(ref, records, state)
        return parse_and_note

    try:
        for name in {case.harness for case in CASES.values()}:
            HARNESSES[name] = replace(originals[name], parse=recording(name))
        for key, case in CASES.items():
            read_case(case, tmp_path_factory.mktemp(key.replace("/", "-")))
    finally:
        HARNESSES.update(originals)
    assert {c.harness for c in seen} == {case.harness for case in CASES.values()}
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_no_value_in_any_field_of_a_variant_stops_reading(variant_calls: list[Call], data: st.DataObject,
                                                          tmp_path: Path) -> None:
    from harvester.bank import open_bank
    from harvester.bank.sqlite_events import event_rows
    from harvester.capture.contract import Cursor
    from harvester.capture.ingest import Ingestor
    from harvester.capture.reading import Chunk, Outcome, ParserFailed, read_batch
    from harvester.capture.validate import repair
    from harvester.parsers import HARNESSES

    call = data.draw(st.sampled_from(variant_calls), label="source")
    harness = HARNESSES[call.harness]
    records = _mutated(call, data)
    try:
        batch, redactions, _ = read_batch(harness, call.ref, records, {}, split=call.split)
    except ParserFailed:
        assert not call.split, "only a whole document may fail its source"
        return
    assert repair(batch, {}) == [], "read_batch hands over only values of their declared types"
    orjson.dumps(batch.state)
    rows = event_rows(batch.events)
    with open_bank(tmp_path / "bank.sqlite") as bank, Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
        path = f"{call.ref.path}.{next(EXAMPLES)}"
        chunk = Chunk(batch, Cursor(call.harness, path, "jsonl", offset=1, line=len(records)), redactions, rows, True, 1)
        assert ingestor._commit_source(harness, iter([chunk]), Outcome(path, "new")).outcome == "new"


if __name__ == "__main__":  # texts kept per case, for the closing note
    import tempfile

    for name, case in sorted(CASES.items()):
        with tempfile.TemporaryDirectory() as tmp:
            events, _, _ = read_case(case, Path(tmp))
            print(f"{name}: {len(kept(case, events))}/{len(case.texts)}", file=sys.stdout)
