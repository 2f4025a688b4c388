"""Every fixture tree reads exactly as its reviewed expected file says (see tests/golden.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.golden import dumps, expected_path, reading, trees

TREES = trees()


def test_every_fixture_tree_has_an_expected_reading() -> None:
    names = {(folder, name) for folder, name, _ in TREES}
    assert ("claude_code", "hand") in names and ("codex", "hand") in names
    assert len([n for f, n in names if n.startswith("real-")]) >= 10
    for folder, name, _ in TREES:
        assert expected_path(folder, name).exists(), f"run `python -m tests.golden` for {folder}/{name}"


@pytest.mark.parametrize(("folder", "name", "root"), TREES, ids=[f"{f}/{n}" for f, n, _ in TREES])
def test_fixture_reads_as_expected(folder: str, name: str, root: Path) -> None:
    expected = expected_path(folder, name)
    got = reading(folder, root)
    assert orjson.loads(dumps(got)) == orjson.loads(expected.read_bytes()), (
        f"{folder}/{name} reads differently; if intended, run `python -m tests.golden` and review the diff"
    )
    assert got["problems"] == [], "fixtures are written in the agent's exact format: no drift, no malformed"
