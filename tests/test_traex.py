"""TraeX (TRAE CLI 2.0): a Codex-format rollout store under ~/.trae/cli, read by the Codex family's parser
under a harness of its own (fixtures/traex/SOURCE.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from harvester.parsers import HARNESSES, codex
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "traex" / "hand"
PARENT = "019fbc4a-48b9-7472-a0da-6d92901383db"
CHILD = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"  # spawned by PARENT (session_meta.source.subagent)
ARCHIVED = "019fa001-2222-7000-8000-00000000000a"


def _home(tmp: Path) -> Path:
    home = tmp / "home"
    shutil.copytree(HAND, home / ".trae" / "cli")
    return home


def test_registered_as_a_member_of_the_codex_family() -> None:
    harness = HARNESSES[codex.TRAEX_NAME]
    assert harness.parse is codex.parse and harness.sources == codex.SOURCES
    assert harness.roots({}, Path("/h")) == [Path("/h/.trae/cli")]
    # CODEX_HOME belongs to Codex alone: TraeX never looks there, so no rollout is imported twice.
    assert harness.roots({"CODEX_HOME": "/h/.trae/cli-not"}, Path("/h")) == [Path("/h/.trae/cli")]
    assert HARNESSES[codex.NAME].roots({}, Path("/h")) == [Path("/h/.codex")]


def test_rollouts_read_with_subagent_linked(tmp_path: Path) -> None:
    home = _home(tmp_path)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (codex.TRAEX_NAME,))
    assert report.harnesses[codex.TRAEX_NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {PARENT, CHILD, ARCHIVED}
    child = session_of(bank, CHILD)
    assert (child["parent_native_id"], child["parent_kind"]) == (PARENT, "subagent")
    assert child["meta"]["model_provider"] == "trae"
    assert shapes(events_of(bank, PARENT)) == [("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                                               ("assistant", "text")]
    assert session_of(bank, ARCHIVED)["title"] == "Rename the config loader."


def test_codex_does_not_read_traex_files(tmp_path: Path) -> None:
    home = _home(tmp_path)
    report = scan(home, tmp_path / "bank.sqlite", (codex.NAME,))
    assert report.harnesses[codex.NAME].sources == 0
