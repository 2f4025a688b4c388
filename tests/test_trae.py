"""Trae IDE: its agent store is encrypted, so the harness only says it is there (fixtures/trae/SOURCE.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from harvester.parsers import HARNESSES, trae
from harvester.parsers.base import opaque_found
from tests.helpers import FIXTURES, scan
from tests.machine import harvester_cli

HAND = FIXTURES / "trae" / "hand"


def _home(tmp: Path, product: str = "Trae") -> Path:
    home = tmp / "home"
    shutil.copytree(HAND, home / ".config" / product)
    return home


def test_roots_per_os_and_build() -> None:
    got = trae.roots({}, Path("/h"))
    assert Path("/h/.config/Trae") in got and Path("/h/.config/Trae CN") in got
    assert Path("/h/Library/Application Support/TRAE SOLO CN") in got
    assert Path("/h/AppData/Roaming/Trae") in got
    assert Path("C:/Users/u/AppData/Roaming/Trae") in trae.roots({"APPDATA": "C:/Users/u/AppData/Roaming"}, Path("/h"))


def test_encrypted_store_is_counted_never_read(tmp_path: Path) -> None:
    home = _home(tmp_path, "Trae CN")
    harness = HARNESSES[trae.NAME]
    found = opaque_found(harness, harness.roots({}, home))
    assert [(f["path"], f["files"]) for f in found] == [
        (str(home / ".config/Trae CN/ModularData/ai-agent/database.db"), 1)]
    report = scan(home, tmp_path / "bank.sqlite", (trae.NAME,), env={"HOME": str(home)})
    assert (report.harnesses[trae.NAME].sources, report.harnesses[trae.NAME].problems) == (0, 0)


def test_status_says_present_not_readable(tmp_path: Path) -> None:
    _home(tmp_path)
    shown = harvester_cli(tmp_path, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    row = next(h for h in orjson.loads(shown.stdout)["harnesses"] if h["name"] == trae.NAME)
    assert (row["sessions"], row["not_readable"][0]["files"]) == (0, 1)
    assert row["not_readable"][0]["reason"] == trae.OPAQUE[0].reason
