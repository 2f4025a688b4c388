"""The usage API the web viewer calls (harvester/usage/api.py): plain functions over a bank opened read-only,
returning dataclasses with the ``--json`` field names, equal to what ``harvester usage --json`` says."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import scan
from tests.test_usage_cli import captured, usage  # noqa: F401 (captured: the module's fixture)
from tests.test_usage_options import _claude_at


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the API's price book: never the user's


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_daily_costs_by_agent_and_model_are_the_reports(captured: Path) -> None:  # noqa: F811
    from harvester.usage.api import daily_costs

    before = _listing(captured.parent)
    days = daily_costs(captured, zone=UTC)
    assert _listing(captured.parent) == before  # read-only: nothing written into the bank or beside it
    [day] = usage(captured, "--by", "harness,model")["rows"]
    assert [dataclasses.asdict(d) for d in days] == [
        {"day": day["date"], **{k: tuple(v) if k == "models" else v for k, v in part.items()}}
        for part in day["breakdown"]]
    fake = next(d for d in days if d.model == "fake-model")
    assert fake.harness == "codex" and fake.cost_usd is None and fake.unpriced_responses == fake.responses > 0
    assert daily_costs(captured, since=datetime(2026, 11, 30).date(), zone=UTC) == []
    assert {d.harness for d in daily_costs(captured, harnesses=("codex",), zone=UTC)} == {"codex"}


def test_sessions_by_cost_dearest_first_unknown_last(captured: Path) -> None:  # noqa: F811
    from harvester.usage.api import sessions_by_cost

    found = sessions_by_cost(captured, limit=100)
    rows = usage(captured, "session")["rows"]
    assert len(found) == len(rows) and {s.session for s in found} == {r["session"] for r in rows}
    priced = [s.cost_usd for s in found if s.cost_usd is not None]
    assert priced == sorted(priced, reverse=True) and priced
    assert [s.cost_usd for s in found[len(priced):]] == [None] * (len(found) - len(priced))
    dearest = next(r for r in rows if r["session"] == found[0].session)
    assert found[0].total_tokens == dearest["total_tokens"] and found[0].title == dearest["title"]
    assert found[0].bank_id == dearest["bank_id"] and found[0].harness == "claude-code"
    assert len(sessions_by_cost(captured, limit=2)) == 2


def test_current_block_is_the_active_one_or_none(tmp_path: Path, captured: Path) -> None:  # noqa: F811
    from harvester.usage.api import current_block

    assert current_block(captured) is None  # the captures' block ended long ago
    now = datetime.now(UTC)
    _claude_at(tmp_path / "home", "/home/dev/src/demo-repo", "s1", [now - timedelta(minutes=40),
                                                                    now - timedelta(minutes=10)])
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, ("claude-code",))
    block = current_block(bank, now=now)
    assert block is not None
    assert block.start == (now - timedelta(minutes=40)).replace(minute=0, second=0, microsecond=0)
    assert block.end == block.start + timedelta(hours=5)
    assert block.responses == 2 and block.total_tokens == 2200
    assert block.tokens_per_minute == pytest.approx(2200 / 30)
    assert block.remaining_minutes == round((block.end - now).total_seconds() / 60)
    assert block.projected_total_tokens == round(2200 + 2200 / 30 * block.remaining_minutes)
    assert block.projected_cost_usd is not None and block.projected_cost_usd >= (block.cost_usd or 0)


def test_an_older_bank_is_refused_not_migrated(tmp_path: Path, captured: Path) -> None:  # noqa: F811
    import sqlite3

    from harvester.bank import BankError
    from harvester.usage.api import daily_costs
    from tests.helpers import as_migration_15_left_it

    older = tmp_path / "older.sqlite"
    with sqlite3.connect(captured) as source, sqlite3.connect(older) as copy:
        source.backup(copy)
    conn = sqlite3.connect(older)
    as_migration_15_left_it(conn)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    with pytest.raises(BankError, match="older harvester"):
        daily_costs(older)
    conn = sqlite3.connect(older)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    conn.close()
    assert not os.path.exists(f"{older}-wal")
