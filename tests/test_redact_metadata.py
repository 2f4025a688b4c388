"""Issue 23: every string a parser returns is redacted before the bank, metadata and ids included.

The fields are found by walking the model's dataclasses, so that a field added to the model later is covered by
this test without a change to it: if it can hold a string and the batch redaction forgets it, the test fails.
"""

from __future__ import annotations

import dataclasses
import random
import types
import typing
from typing import Any, Literal

import pytest

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch, Usage
from harvester.redact import redact
from harvester.redact.batch import redact_batch, redact_state
from harvester.redact.urls import clean_url, clean_urls_in

GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # built by concatenation: no literal token
AWS = "AKIA" + "Q3ZT7KEYIDW2XZ4B"
CLASSES = (Event, SessionPatch, GitFacts, Problem, Mark, Usage)


def _string_fields(cls: type) -> list[str]:
    """The fields of ``cls`` that can hold a string a parser chose (not a Literal of the model's own)."""
    hints = typing.get_type_hints(cls)
    names = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        if any(a is str or a is Any for a in args) and not any(typing.get_origin(a) is Literal for a in args):
            names.append(f.name)
    return names


def _planted(field: str, n: int) -> str:
    return f"{field}-{n}-{GITHUB}"


def _batch() -> Batch:
    batch = Batch()
    patch = SessionPatch(_planted("native_id", 0))
    for name in _string_fields(SessionPatch):
        if name != "native_id":
            setattr(patch, name, _planted(name, 0))
    patch.git = GitFacts(**{name: _planted(name, 0) for name in _string_fields(GitFacts)})
    patch.git.origin_url = "https://x-access-token:" + GITHUB + "@github.com/octo/app.git?access_token=abc123"
    patch.meta = {"repo": {"url": "https://deploy@git.example.com/a.git"}, GITHUB: "as a key", "k": AWS}
    batch.sessions[patch.native_id] = patch
    for n, kind in enumerate(("tool_call", "tool_result"), start=1):
        event = Event(patch.native_id, _planted("uid", n), "assistant" if n == 1 else "tool", kind)  # type: ignore[arg-type]
        for name in _string_fields(Event):
            if name not in ("session", "uid", "tool_input", "meta"):
                setattr(event, name, _planted(name, 0))  # the same tool_call_id on the call and its result
        event.tool_input = {"command": f"export GITHUB_TOKEN={GITHUB}", GITHUB: [AWS]}
        event.meta = {"note": f"see https://u:{GITHUB}@h/x", "list": [GITHUB]}
        batch.events.append(event)
    batch.problems.append(Problem("unknown_type", 3, _planted("detail", 0)))
    batch.marks.append(Mark(patch.native_id, {"why": GITHUB}, uids=(_planted("uid", 1),), since=_planted("since", 0),
                            until=_planted("until", 0)))
    return batch


def _strings(value: Any) -> list[str]:
    """Every string in ``value``: dataclass fields, dict keys and values, list and tuple items."""
    if isinstance(value, str):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [s for f in dataclasses.fields(value) for s in _strings(getattr(value, f.name))]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def test_every_string_a_parser_returns_is_redacted() -> None:
    batch = _batch()
    planted = [s for s in _strings(batch) if GITHUB in s or AWS in s]
    assert len(planted) > 30  # every string field of every class, keys and values of the dicts
    for cls in CLASSES:  # the walk reaches every string field of the model
        assert all(name in {f.name for f in dataclasses.fields(cls)} for name in _string_fields(cls))
    redactions = redact_batch(batch)
    left = [s for s in _strings(batch) if GITHUB in s or AWS in s or "x-access-token" in s or "abc123" in s]
    assert left == []
    # Ids are redacted alike wherever they stand: the session's events and mark still name it, the result still
    # answers its call, the mark still names its event.
    [(key, patch)] = batch.sessions.items()
    assert key == patch.native_id == batch.events[0].session == batch.events[1].session == batch.marks[0].session
    assert batch.events[0].tool_call_id == batch.events[1].tool_call_id
    assert batch.marks[0].uids == (batch.events[0].uid,)
    assert patch.git is not None and patch.git.origin_url == "https://github.com/octo/app.git?access_token=[REDACTED:token]"
    assert patch.meta is not None and patch.meta["repo"] == {"url": "https://git.example.com/a.git"}
    assert list(redactions) == [key] and redactions[key] >= 30  # counted against the session, as text is


def test_a_clean_batch_is_left_as_it_is() -> None:
    batch = Batch()
    patch = batch.session("0b4f2c1e-9d7a-4c1b-8f3e-2a6d5b7c9e01")
    patch.cwd, patch.model, patch.git = "/home/dev/app", "claude-sonnet-4-5", GitFacts("main", "4f1bd2c5", "git@github.com:o/r.git")
    patch.meta = {"origin": "https://github.com/o/r"}
    meta = patch.meta
    event = Event(patch.native_id, "toolu_01ABCDEFGHJKLMNOPQRSTUVWX", "assistant", "tool_call", "ls",
                  tool_name="Bash", tool_input={"command": "ls"}, tool_call_id="toolu_01ABCDEFGHJKLMNOPQRSTUVWX",
                  ts="2026-08-03T10:48:56.118Z", model="claude-sonnet-4-5")
    batch.events.append(event)
    assert redact_batch(batch) == {}
    assert patch.meta is meta and patch.git.origin_url == "git@github.com:o/r.git"


PIECES = ["0b4f2c1e-9d7a-4c1b-8f3e-2a6d5b7c9e01", "Bash", "claude-sonnet-4-5", "/home/dev/app", "main",
          "https://github.com/o/r", "git@github.com:o/r.git", AWS, AWS[:10], AWS[10:], GITHUB, GITHUB[:20],
          "password=hunter2x", "postgres://u:pa", "ss@h/d", "machine example.com", "password s3cr3t-pw",
          "curl -u admin:Qz7-s3cr3t", "\\", "sshpass -p", "s3cr3tPW ssh h", "http://localhost:8080",
          "admin@example.com", "token: " + "ab12" * 6, "x" * 30, "2026-08-03T10:48:56.118Z", "AC" + "0f" * 16,
          "0f" * 16, "-----BEGIN RSA PRIVATE KEY-----", "MIIEow" + "q" * 60, "-----END RSA PRIVATE KEY-----"]


@pytest.mark.parametrize("seed", range(40))
def test_the_screen_finds_what_each_string_alone_holds(seed: int) -> None:
    # The batch's short strings are scanned joined by line breaks; only if that finds something are they
    # redacted one by one. Joining must never hide what a string alone holds.
    rng = random.Random(seed)
    strings = [rng.choice(PIECES) + rng.choice(["", " ", "\n", rng.choice(PIECES)]) for _ in range(rng.randint(1, 8))]
    alone = any(redact(s)[1] for s in strings)
    assert not alone or redact("\n".join(strings))[1], strings


def test_the_state_a_cursor_keeps_is_redacted() -> None:
    state = {"cwd": "/work/app", "branch": "fix/" + AWS, "prompt": f"use {GITHUB}", "ids": ["a", "b"], "n": 3}
    stored = redact_state(state)
    assert stored == {"cwd": "/work/app", "branch": "fix/[REDACTED:aws-access-key-id]",
                      "prompt": "use [REDACTED:github-token]", "ids": ["a", "b"], "n": 3}
    assert state["branch"] == "fix/" + AWS  # the parser's own copy is left as it is
    clean = {"cwd": "/work/app", "ids": ["a"]}
    assert redact_state(clean) is clean


@pytest.mark.parametrize(
    ("url", "cleaned"),
    [
        ("https://x-access-token:" + GITHUB + "@github.com/o/r.git", "https://github.com/o/r.git"),
        ("https://" + GITHUB + "@github.com/o/r", "https://github.com/o/r"),
        ("ssh://git@github.com:22/o/r.git", "ssh://github.com:22/o/r.git"),
        ("https://u:p@ss@[::1]:8443/r?ref=main#readme", "https://[::1]:8443/r?ref=main#readme"),
        ("https://h/o/r?access_token=abc&ref=main&X-Amz-Signature=f00&sig=x&api_key=k&page=2",
         "https://h/o/r?access_token=[REDACTED:token]&ref=main&X-Amz-Signature=[REDACTED:token]"
         "&sig=[REDACTED:token]&api_key=[REDACTED:token]&page=2"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("https://github.com/o/r", "https://github.com/o/r"),
        ("https://h/a@b?monkey=1", "https://h/a@b?monkey=1"),
        ("/srv/git/r.git", "/srv/git/r.git"),
    ],
)
def test_a_stored_url_loses_its_userinfo_and_query_credentials(url: str, cleaned: str) -> None:
    assert clean_url(url) == cleaned
    if url == cleaned:
        assert clean_url(url) is url


def test_urls_inside_a_metadata_string_are_cleaned_and_counted() -> None:
    text = "cloned https://deploy:pw@git.example.com/a.git?token=t0k then https://github.com/o/r"
    assert clean_urls_in(text) == ("cloned https://git.example.com/a.git?token=[REDACTED:token] then "
                                   "https://github.com/o/r", {"url-password": 1, "token": 1})
    plain = "no url here"
    assert clean_urls_in(plain) == (plain, {}) and clean_urls_in(plain)[0] is plain
