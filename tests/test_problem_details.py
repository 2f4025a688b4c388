"""A problem row says what was wrong with a record and where (its line, the field, the type of what was there),
never what the transcript said there: the problems table is not redacted text, it outlives ``forget``, and
``status`` prints it. A short type name stays (it is the format drift the row is for); a value does not.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from harvester.parsers import HARNESSES
from harvester.parsers.base import describe_error
from tests.helpers import ClaudeSession, scan

MARKER = "PLUM-ZEBRA-4417"


def _details(bank: Path) -> list[str]:
    conn = sqlite3.connect(bank)
    try:
        return ([d for (d,) in conn.execute("SELECT detail FROM problems ORDER BY line")]
                + [e for (e,) in conn.execute("SELECT error FROM sources WHERE error IS NOT NULL")])
    finally:
        conn.close()


def _bank_bytes(tmp: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(tmp.glob("bank.sqlite*")) if p.is_file())


def test_a_record_of_an_unknown_type_is_named_by_its_kind_not_its_text(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("hi"), orjson.dumps(s._envelope(f"the staging password is {MARKER}, keep it handy")) + b"\n",
            orjson.dumps(s._envelope("hologram")) + b"\n")
    scan(home, bank, ("claude-code",))
    details = _details(bank)
    assert len(details) == 2 and not any(MARKER in d for d in details), details
    assert "type='hologram'" in details  # a type's name: what drifted
    assert MARKER.encode() not in _bank_bytes(tmp_path)


def test_values_a_parser_or_the_checks_quote_stay_out_of_problem_rows(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"the code is {MARKER}"
    real = HARNESSES["claude-code"]

    def parse(ref, records, state):  # type: ignore[no-untyped-def]
        for record in records:  # what parsers raise on a bad value: its message quotes the value
            if b"RAISE-VALUE" in record.raw:
                raise ValueError(f"invalid literal for int() with base 10: '{secret}'")
            if b"RAISE-KEY" in record.raw:
                raise KeyError(secret)
            if b"RAISE-OTHER" in record.raw:
                raise RuntimeError(f"cannot use {secret!r}")
        batch = real.parse(ref, records, state)
        for event in batch.events:
            if "ROLE" in event.text:
                event.role = secret  # type: ignore[assignment]  # a role passed through from the record
        return batch

    monkeypatch.setitem(HARNESSES, "claude-code", replace(real, parse=parse))
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("hi"), s.user("RAISE-VALUE"), s.user("RAISE-KEY"), s.user("RAISE-OTHER"), s.user("ROLE"))
    scan(home, bank, ("claude-code",))
    details = _details(bank)
    assert len(details) == 4 and not any(MARKER in d for d in details), details
    assert any("wrong-typed values: event role/kind" in d for d in details), details
    assert MARKER.encode() not in _bank_bytes(tmp_path)


@pytest.mark.parametrize(("exc", "said"), [
    (ValueError(f"invalid literal for int() with base 10: 'x {MARKER}'"),
     "a value that cannot be used (invalid literal for int() with base 10: (text of 17 characters))"),
    (KeyError(f"the code is {MARKER}"), "no entry for a value the record holds"),
    (TypeError(f"'<' not supported between instances of 'str' and 'int' ({MARKER!r})"),
     "a value of the wrong type ('<' not supported between instances of 'str' and 'int' ((text of 15 characters)))"),
    (RuntimeError(f"bad {MARKER!r} here"), "RuntimeError: bad (text of 15 characters) here"),
])
def test_describe_error_says_the_kind_of_a_value_never_the_value(exc: BaseException, said: str) -> None:
    assert describe_error(exc) == said
