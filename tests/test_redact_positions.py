"""The scans placed by one Hyperscan pass (issue 29, harvester/redact/positions.py) find what they found over the
whole text.

A scan matched only at the places ``positions.py`` reports finds the same matches as a scan of the whole text
exactly when every place its pattern matches is reported. That is checked here scan by scan, stop by stop, on the
secrets corpus, every string of the redaction tests, the bench's planted secrets, generated provider tokens and
mutations of them (escaped and real line breaks, JSON escaping, case, terminal colours); and ``redact`` is
compared with the whole-text scans on all of them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.bench_redact import clean_events, dirty_events
from bench.secret_corpus import load
from harvester.redact import RULES, engine, redact
from harvester.redact.engine import _PLAN, candidates
from harvester.redact.rule import Rule

TESTS = Path(__file__).resolve().parent
POSITIONS = engine._POSITIONS


@contextlib.contextmanager
def _whole_scans() -> Iterator[None]:
    """``redact`` as it ran before positions.py: every scan over the whole text."""
    engine._POSITIONS = None
    try:
        yield
    finally:
        engine._POSITIONS = POSITIONS


def _redact_whole(text: str) -> tuple[str, dict[str, int]]:
    with _whole_scans():
        return redact(text)


@functools.cache
def _test_strings() -> tuple[str, ...]:
    """Every string constant of the redaction tests (their positives and negatives alike)."""
    out: list[str] = []
    for path in sorted(TESTS.glob("test_redact*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= 8:
                out.append(node.value)
    return tuple(out)


# Kinds that neither the corpus nor the tests hold (spliced as the corpus is: no literal token).
_EXTRA = (
    "AZURE_CLIENT_SECRET value is xyz8Q~" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3" + " in the portal",
    "Authorization token eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "git clone https://" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7" + ":x-oauth-basic@github.com/org/repo.git",
    "POST https://contoso.webhook.office.com/webhookb2/" + "a1b2c3d4-" * 8 + "@x/IncomingWebhook/" + "f0" * 16,
    "TWILIO: AC" + "0123456789abcdef" * 2 + " auth " + "fedcba9876543210" * 2,
    "key SK" + "0123456789abcdef" * 2 + " and bot 123456789:AA" + "x1Y2z3" * 6,
    "psql postgres:/\\n/app:pw1234@db and postgres:\\r\\n//app:pw1234@db and x:/\\r\\n/u:p9q8r7@h",
)


@functools.cache
def _texts() -> tuple[str, ...]:
    corpus = [e.text for e in load()]
    planted = dirty_events(clean_events(300_000, 7), 7, every=2_000)
    return (*corpus, *_test_strings(), *planted, *_EXTRA)


def _unplaced(text: str) -> list[str]:
    """Every stop of a whole-text scan that ``positions.py`` does not place, as 'scan: text there'."""
    raw = text.encode("latin-1", "replace")
    low = raw.lower()
    assert POSITIONS is not None
    places = POSITIONS.find(raw)
    missed = []
    for n, scan in enumerate(_PLAN):
        hay = low if scan.lower else raw
        placed = places.get(n, set())
        m = scan.pattern.search(hay)
        while m is not None:
            if m.start() not in placed:
                missed.append(f"{scan.pattern.pattern[:12]!r}: {text[max(0, m.start() - 20) : m.end() + 20]!r}")
            m = scan.pattern.search(hay, m.start() + 1)
    return missed


def _stops(text: str) -> int:
    raw = text.encode("latin-1", "replace")
    low = raw.lower()
    return sum(len(list(re.finditer(scan.pattern, low if scan.lower else raw))) for scan in _PLAN)


def test_every_scan_is_placed() -> None:
    assert POSITIONS is not None and not POSITIONS.whole  # Hyperscan is a dependency; every scan has places


def test_every_stop_of_every_scan_is_placed_in_the_texts() -> None:
    stops = 0
    for text in _texts():
        assert not _unplaced(text), (_unplaced(text), text[:200])
        stops += _stops(text)
    assert stops > 800  # the texts do stop the scans (every rule: the next test)


def test_every_rule_has_a_candidate_in_the_texts() -> None:
    # A place is only tested where its rule stops: every rule but the provider formats (generated below) must
    # find something here.
    found = {i for text in _texts() for i, *_ in candidates(text, whole=True)}
    missing = [(i, r.kind) for i, r in enumerate(RULES) if i not in found and r not in _FORMATS]
    assert not missing


def test_every_text_redacts_as_with_whole_scans() -> None:
    for text in _texts():
        assert redact(text) == _redact_whole(text), text[:200]
        assert sorted(candidates(text)) == sorted(candidates(text, whole=True))


def _prefixes(rule: Rule) -> list[bytes]:
    """The literal prefixes of a provider format (its hooks' sure places are the prefixes, hex-escaped)."""
    return [bytes(int(h, 16) for h in re.findall(rb"\\x([0-9a-f]{2})", hook.sure.expression))
            for hook in rule.hooks if hook.sure is not None]


def _format(rule: Rule) -> bytes | None:
    """The body of a provider format made by ``token()``: its pattern after the prefixes, without the end."""
    prefixes = _prefixes(rule)
    alternatives = b"|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    _, sep, rest = rule.pattern.pattern.partition(b"(?:" + alternatives + b")")
    if not prefixes or not sep:
        return None
    return re.sub(rb"\(\?!\[[^\]]*\]\)$", b"", rest)


_FORMATS = {r: body for r in RULES if (body := _format(r)) is not None}


def _mutate(text: str, secret: str, how: str, at: int) -> str:
    i = text.find(secret)
    cut = i + 1 + at % max(1, len(secret) - 1)  # inside the secret
    if how == "escaped-break":
        return text[:cut] + "\\n" + text[cut:]
    if how == "escaped-crlf":
        return text[:cut] + "\\r\\n" + text[cut:]
    if how == "break":
        return text[:cut] + "\n" + text[cut:]
    if how == "json":
        return json.dumps({"output": text})
    if how == "json-twice":
        return json.dumps(json.dumps(text))
    if how == "upper":
        return text.upper()
    if how == "lower":
        return text.lower()
    if how == "swapcase":
        return text[:cut] + text[cut:].swapcase()
    return "\x1b[1;32m" + text + "\x1b[0m"  # a terminal colour around it


_HOW = ("escaped-break", "escaped-crlf", "break", "json", "json-twice", "upper", "lower", "swapcase", "colour")


@pytest.mark.parametrize("rule", list(_FORMATS), ids=lambda r: r.kind)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(data=st.data())
def test_generated_provider_tokens_are_placed(rule: Rule, data: st.DataObject) -> None:
    prefix = data.draw(st.sampled_from(_prefixes(rule)))
    body = data.draw(st.from_regex(_FORMATS[rule], fullmatch=True))
    token = (prefix + body).decode("latin-1")
    how = data.draw(st.sampled_from(_HOW))
    text = _mutate(f"export X={token} # set\n", token, how, data.draw(st.integers(0, 400)))
    assert not _unplaced(text)
    assert redact(text) == _redact_whole(text)
    plain = f"key: {token}\n"
    assert any(RULES[i] is rule for i, *_ in candidates(plain)) or rule.check is not None


_POSITIVES = [(e.text, s) for e in load() for s in e.secrets]


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.sampled_from(_POSITIVES), st.sampled_from(_HOW), st.integers(0, 10_000), st.sampled_from(_HOW),
       st.integers(0, 10_000))
def test_mutated_positives_are_placed(positive: tuple[str, str], how: str, at: int, how2: str, at2: int) -> None:
    text, secret = positive
    text = _mutate(text, secret, how, at)
    if secret in text:
        text = _mutate(text, secret, how2, at2)
    assert not _unplaced(text)
    assert redact(text) == _redact_whole(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(0, 2**32), st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=0x2192), max_size=80))
def test_planted_secrets_in_random_text_are_placed(seed: int, noise: str) -> None:
    rng = random.Random(seed)
    text, _ = rng.choice(_POSITIVES)
    mixed = noise[: len(noise) // 2] + text + noise[len(noise) // 2 :]
    assert not _unplaced(mixed)
    assert redact(mixed) == _redact_whole(mixed)


def test_a_hyperscan_that_cannot_run_here_leaves_redaction_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    # A CPU Hyperscan does not support, a database it cannot compile: the scans run over the whole text.
    from harvester.redact.positions import Positions

    def broken(self: Positions) -> None:
        raise RuntimeError("Hyperscan requires SSSE3")

    placed = Positions(_PLAN, RULES)
    monkeypatch.setattr(Positions, "_database", broken)
    monkeypatch.setattr(engine, "_POSITIONS", placed)
    text = _EXTRA[0] + "\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    assert redact(text)[1] == {"azure-ad-client-secret": 1, "aws-secret-access-key": 1}
    assert placed.find(b"token = x") is None
