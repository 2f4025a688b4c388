"""A damaged archive never rewrites the bank (harvester/capture/archive/integrity.py).

Every archived frame and blob is checked when it is read. ``reparse`` rebuilds a source only from data that
checks out: its archive, mended where it is damaged from the agent's own file when that file holds the very
bytes the bank recorded digests of; else the source's sessions stay as the bank has them, the damage is
recorded (``status`` names the source and its frames) and ``reparse`` exits 3.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import zstandard

from harvester.bank import open_bank
from harvester.bank.reparse import ReparseReport, reparse
from harvester.capture.archive import archive_dir
from harvester.capture.ingest import Ingestor
from harvester.config import DEFAULT_BANK_ID_TEMPLATE
from tests.helpers import ClaudeSession, bank_rows, event_identities, scan, sessions_of
from tests.machine import harvester_cli, lay_out_every_store
from tests.test_archive import _claude_with_big_output, _sessions


def _claude_in_frames(home: Path, bank: Path, scans: int = 3) -> ClaudeSession:
    """A Claude Code session scanned as it grew: one archived frame per scan."""
    session = ClaudeSession(home, "/work/app")
    for n in range(scans):
        session.write(*session.conversation(20, start=20 * n))
        scan(home, bank, ("claude-code",))
    return session


def _reparse(bank_path: Path, *harnesses: str) -> ReparseReport:
    bank = open_bank(bank_path)
    try:
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            return reparse(ingestor, list(harnesses) or None)
    finally:
        bank.close()


def _query(bank: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(bank)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _frame(bank: Path, seq: int, source: int = 1) -> tuple[int, int]:
    """Where an archived stream frame is in its file: (offset, length)."""
    return _query(bank, "SELECT offset, length FROM archive_frames WHERE source_id = ? AND kind = 'streams' AND "
                        "seq = ?", source, seq)[0]


def _stream(bank: Path, source: int = 1) -> Path:
    return archive_dir(bank) / "streams" / f"{source}-0.zst"


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x55
    path.write_bytes(bytes(data))


def _status(tmp: Path) -> dict:
    done = harvester_cli(tmp, "status", "--json")
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def test_a_damaged_stream_leaves_its_sessions_as_they_were(tmp_path: Path) -> None:
    """The agent's file is gone and one byte of its archived copy flipped: reparse keeps the bank's events,
    says which frame of which source is damaged, exits 3; status shows it until it is mended."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank)
    session.path.unlink()
    rows, sessions = bank_rows(bank), _sessions(bank)
    offset, length = _frame(bank, 2)
    _flip(_stream(bank), offset + length // 2)

    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "damaged" in done.stdout and str(session.path) in done.stdout and "frame 2" in done.stdout, done.stdout
    assert bank_rows(bank) == rows and _sessions(bank) == sessions

    damaged = _status(tmp_path)["archive"]["damaged"]
    assert [(d["path"], [p["part"] for p in d["parts"]]) for d in damaged] == [
        (str(session.path), ["streams/1-0.zst frame 2"])]
    shown = harvester_cli(tmp_path, "status").stdout
    assert "DAMAGED" in shown and "frame 2" in shown, shown

    again = harvester_cli(tmp_path, "reparse")  # still damaged: still left as it is
    assert again.returncode == 3 and bank_rows(bank) == rows and _sessions(bank) == sessions


def test_a_damaged_stream_is_mended_from_the_agents_file_that_matches_it(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank)
    rows, sessions = bank_rows(bank), _sessions(bank)
    offset, length = _frame(bank, 2)
    _flip(_stream(bank), offset + length // 2)

    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mended" in done.stdout and "frame 2" in done.stdout, done.stdout
    assert bank_rows(bank) == rows and _sessions(bank) == sessions
    assert _status(tmp_path)["archive"]["damaged"] == []

    session.path.unlink()  # the archive is whole again: alone, it gives the same bank
    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 0 and "damaged" not in done.stdout, done.stdout
    assert bank_rows(bank) == rows and _sessions(bank) == sessions


def test_scans_go_on_reading_the_agents_file_after_a_reparse_of_a_damaged_archive(tmp_path: Path) -> None:
    """What the issue saw: reparse rebuilt a session from a stream cut short (fewer events), while the
    source's cursor still said the file was read to its end, so later scans found "nothing new" and the
    bank never got them back. Now the bank after reparse and a scan is a fresh scan of the file."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank)
    offset, length = _frame(bank, 3)
    os.truncate(_stream(bank), offset + length // 2)  # the last frame cut short (a disk full, a bad copy)
    session.write(*session.conversation(3, start=60))  # and the agent goes on
    _reparse(bank)
    scan(home, bank, ("claude-code",))

    fresh = tmp_path / "fresh.sqlite"
    scan(home, fresh, ("claude-code",))
    assert len(event_identities(fresh)) == 126
    assert event_identities(bank) == event_identities(fresh)


def test_a_stream_read_again_from_its_start_is_mended_epoch_by_epoch(tmp_path: Path) -> None:
    """A file the agent rewrote (cut back, then written on) is archived in epochs, each read in its order: a
    damaged frame is mended from the file wherever the file still holds its bytes (its own epoch, or an
    older one whose start the rewrite kept), and the epochs keep their order; where it does not, the
    sessions stay as they are."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank, scans=2)
    kept = b"".join(session.path.read_bytes().splitlines(keepends=True)[:40])
    session.path.write_bytes(kept + b"".join(session.conversation(3, start=100)))  # shorter: read anew
    scan(home, bank, ("claude-code",))
    assert _query(bank, "SELECT epoch, seq FROM archive_frames ORDER BY 1, 2") == [(0, 1), (0, 2), (1, 1)]
    rows, sessions = bank_rows(bank), _sessions(bank)
    assert len(rows) == 80 + 6
    pristine = tmp_path / "pristine"
    shutil.copytree(archive_dir(bank), pristine)
    shutil.copy2(bank, tmp_path / "pristine.sqlite")

    def damage(epoch: int, seq: int) -> None:
        shutil.rmtree(archive_dir(bank))
        shutil.copytree(pristine, archive_dir(bank))
        shutil.copy2(tmp_path / "pristine.sqlite", bank)
        (offset, length), = _query(bank, "SELECT offset, length FROM archive_frames WHERE epoch = ? AND seq = ?",
                                   epoch, seq)
        _flip(archive_dir(bank) / "streams" / f"1-{epoch}.zst", offset + length // 2)

    for epoch, seq in ((1, 1), (0, 1)):  # the file holds their bytes
        damage(epoch, seq)
        report = _reparse(bank)
        assert bank_rows(bank) == rows and _sessions(bank) == sessions
        assert [s.mended for s in report.sources] == [[f"streams/1-{epoch}.zst frame {seq}"]]
        away = session.path.rename(tmp_path / "away.jsonl")  # the archive alone gives it all again, in order
        assert [s.how for s in _reparse(bank).sources] == ["archive"]
        assert bank_rows(bank) == rows and _sessions(bank) == sessions
        away.rename(session.path)

    damage(0, 2)  # lines the rewrite dropped: only the archive had them
    report = _reparse(bank)
    assert [(s.how, s.damage) for s in report.sources] == [("damaged", ["streams/1-0.zst frame 2"])]
    assert bank_rows(bank) == rows and _sessions(bank) == sessions


def _forget_digests(bank: Path) -> None:
    """The bank's index as an archive made before frames had digests left it."""
    conn = sqlite3.connect(bank)
    try:
        if any(c[1] == "digest" for c in conn.execute("PRAGMA table_info(archive_frames)")):
            conn.execute("UPDATE archive_frames SET digest = NULL")
            conn.commit()
    finally:
        conn.close()


def test_frames_archived_before_they_had_digests_are_checked_by_their_structure(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank)
    _forget_digests(bank)
    rows = bank_rows(bank)
    assert [s.how for s in _reparse(bank).sources] == ["archive"]  # whole: read as before
    assert bank_rows(bank) == rows

    offset, length = _frame(bank, 3)
    os.truncate(_stream(bank), offset + length // 2)
    session.write(*session.conversation(2, start=60))
    # Without a digest, the agent's file cannot be told to hold what the archive did: left as it was.
    report = _reparse(bank)
    assert bank_rows(bank) == rows
    assert [(s.how, s.damage) for s in report.sources] == [("damaged", ["streams/1-0.zst frame 3"])]
    scan(home, bank, ("claude-code",))  # and the file is read on from where the bank stood
    fresh = tmp_path / "fresh.sqlite"
    scan(home, fresh, ("claude-code",))
    assert event_identities(bank) == event_identities(fresh)


def _aider_store(tmp: Path) -> None:
    """Aider's histories (one file, many sessions) in their repositories, configured as roots."""
    lay_out_every_store(tmp / "home", only=("aider",))
    repositories = sorted({str(p.parent) for p in (tmp / "home" / "src").rglob(".aider.chat.history.md")})
    (tmp / "config.toml").write_text("[roots]\naider = " + orjson.dumps(repositories).decode() + "\n")


@pytest.mark.parametrize(("harness", "forgotten"), [("aider", "webapp@2026-08-01T14:30:05"),
                                                  ("opencode", "ses_e07d0e17fffeSbXOIkDj8Q6xzR")])
def test_a_repacked_frame_archived_before_digests_is_not_taken_for_damage(tmp_path: Path, harness: str,
                                                                         forgotten: str) -> None:
    """A stream re-packed by forget holds blank lines in place of the forgotten session's, so its length is
    not the source range it covers; a database's re-packed rows frame holds the rows that stay: the structural
    check of a frame without a digest takes neither for damage."""
    if harness == "aider":
        _aider_store(tmp_path)
    else:
        lay_out_every_store(tmp_path / "home", only=(harness,))
    assert harvester_cli(tmp_path, "scan", "--harness", harness).returncode == 0
    done = harvester_cli(tmp_path, "forget", forgotten, "--yes")
    assert done.returncode == 0 and "could not be told apart" not in done.stdout, done.stdout
    bank = tmp_path / "bank.sqlite"
    _forget_digests(bank)
    rows = bank_rows(bank)
    shutil.rmtree(tmp_path / "home")
    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 0 and "damaged" not in done.stdout, done.stdout
    assert bank_rows(bank) == rows


def test_a_deleted_stream_file_stays_reported_after_the_next_append(tmp_path: Path) -> None:
    """A scan appends after what the bank recorded; with the file gone, what it held must not vanish from
    view (the file grows again past the recorded end): it is recorded damaged, and mended by reparse."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    session = _claude_in_frames(home, bank)
    _stream(bank).unlink()
    session.write(*session.conversation(2, start=60))
    scan(home, bank, ("claude-code",))
    damaged = _status(tmp_path)["archive"].get("damaged", [])
    assert [[p["part"] for p in d["parts"]] for d in damaged] == [[f"streams/1-0.zst frame {n}" for n in (1, 2, 3)]]

    rows = bank_rows(bank)
    report = _reparse(bank)
    assert [s.mended for s in report.sources] == [[f"streams/1-0.zst frame {n}" for n in (1, 2, 3)]]
    assert bank_rows(bank) == rows and _status(tmp_path)["archive"]["damaged"] == []
    session.path.unlink()
    assert [s.how for s in _reparse(bank).sources] == ["archive"]
    assert bank_rows(bank) == rows


def test_show_full_never_shows_a_damaged_whole_text(tmp_path: Path) -> None:
    output = "".join(f"line {n:06d} of the build log\n" for n in range(20_000))
    session = _claude_with_big_output(tmp_path / "home", output)
    bank_path = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank_path, ("claude-code",))
    blob = next((archive_dir(bank_path) / "texts").rglob("*.zst"))
    pristine = blob.read_bytes()
    bank = open_bank(bank_path)
    try:
        event = next(e for e in bank.events(bank.list_sessions()[0]["id"]) if e["kind"] == "tool_result")
        assert bank.whole_text(event) == output
        for offset in range(0, len(pristine), max(1, len(pristine) // 97)):
            _flip(blob, offset)
            assert bank.whole_text(event) in (None, output), offset
            blob.write_bytes(pristine)
    finally:
        bank.close()
    _flip(blob, len(pristine) // 2)
    shown = harvester_cli(tmp_path, "show", session.id, "--full", "--json")
    result = next(e for e in orjson.loads(shown.stdout)["events"] if e["kind"] == "tool_result")
    assert result["text"].endswith("[the whole text in the archive is damaged: it is not shown]")


def test_forget_in_a_store_whose_archive_is_damaged(tmp_path: Path) -> None:
    """A re-pack reads the archived records to keep the other sessions': from damaged bytes it would keep
    damaged records. The source's whole archive goes instead (as when the records cannot be told apart);
    the sessions that stay keep their bank copy, and reparse reads them from the agent's file."""
    _aider_store(tmp_path)
    assert harvester_cli(tmp_path, "scan", "--harness", "aider").returncode == 0
    bank = tmp_path / "bank.sqlite"
    before = bank_rows(bank)
    history = next(p for (p,) in _query(bank, "SELECT path FROM sources") if "/webapp/" in p)
    (source,) = _query(bank, "SELECT id FROM sources WHERE path = ?", history)[0]
    offset, length = _frame(bank, 1, source)
    _flip(_stream(bank, source), offset + length // 2)

    done = harvester_cli(tmp_path, "forget", "webapp@2026-08-01T14:30:05", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "damaged" in done.stdout, done.stdout
    left = {s["native_id"] for s in sessions_of(bank)}
    rows = [r for r in before if r[1] in left]
    assert bank_rows(bank) == rows
    assert _query(bank, "SELECT count(*) FROM archive_frames WHERE source_id = ?", source) == [(0,)]
    assert "damaged" in _query(bank, "SELECT archive_gap FROM sources WHERE id = ?", source)[0][0]

    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 0, done.stdout + done.stderr
    assert bank_rows(bank) == rows


# --- the property: whatever happens to an archived file, reparse gives the bank it had ----------------------

def _rollout_zst(home: Path) -> Path:
    """A Codex rollout as Codex leaves it compressed: a .jsonl.zst, archived whole, as it is."""
    path = next((home / ".codex" / "sessions").rglob("rollout-2026-08-03T10-48-56-*.jsonl"))
    zst = path.with_name(path.name + ".zst")
    zst.write_bytes(zstandard.ZstdCompressor().compress(path.read_bytes()))
    path.unlink()
    return zst


# shape -> (harness, its fixture layout (tests/machine.py), the source to damage)
SHAPES: dict[str, tuple[str, str, Callable[[Path], Path]]] = {
    "jsonl stream": ("claude-code", "claude_code", lambda home: home / ".claude" / "projects"
                     / "-home-dev-src-demo-repo" / "6f1d2c9a-4b7e-4e2a-9c31-8d5f0a7b3e12.jsonl"),
    "zstd frames": ("deepseek-harness", "deepseek_harness",
                    lambda home: next((home / ".dsh").rglob("session.jsonl.zstd"))),
    "document": ("amp", "amp", lambda home: home / ".local" / "share" / "amp" / "threads"
                 / "T-019b9d03-62e3-772f-9780-3e637f90eaec.json"),
    "database rows": ("zed", "zed", lambda home: home / ".local" / "share" / "zed" / "threads" / "threads.db"),
    "jsonl.zst": ("codex", "codex", _rollout_zst),
}


def _archived_files(bank: Path, source: int) -> list[Path]:
    where = archive_dir(bank)
    files = [where / kind / f"{source}-{epoch}.zst" for kind, epoch in _query(
        bank, "SELECT DISTINCT kind, epoch FROM archive_frames WHERE source_id = ? ORDER BY 1, 2", source)]
    files += [where / "blobs" / d[:2] / f"{d}.zst" for (d,) in _query(
        bank, "SELECT DISTINCT digest FROM archive_docs WHERE source_id = ? ORDER BY 1", source)]
    return files


def _damages(size: int, rng: random.Random) -> list[tuple[str, Callable[[Path], None]]]:
    """Each way a file can be damaged: a byte flipped at many offsets (its ends included), cut short, gone,
    or replaced with random bytes of the same size."""
    offsets = sorted({0, 1, 5, size // 2, size - 2, size - 1, *rng.sample(range(size), min(size, 10))})
    out: list[tuple[str, Callable[[Path], None]]] = [
        (f"flip at {o}", lambda p, o=o: _flip(p, o)) for o in offsets if 0 <= o < size]
    out += [(f"cut at {n}", lambda p, n=n: os.truncate(p, n)) for n in (0, size // 2, size - 1)]
    out += [("deleted", lambda p: p.unlink()),
            ("random", lambda p: p.write_bytes(rng.randbytes(size)))]
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_a_damaged_archive_never_rewrites_the_bank(tmp_path: Path, shape: str) -> None:
    """For each shape of archive: damage each of the source's archived files in every way, with the agent's
    file kept or gone, and reparse: the bank is the bank it was, every time (with the file kept, a fresh scan
    of the intact original gives that same bank); with the file gone, damage that cannot go unseen is
    reported; with the file kept, the archive is mended."""
    harness, layout, pick = SHAPES[shape]
    home = tmp_path / "home"
    lay_out_every_store(home, only=(layout,))
    original = pick(home)
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, (harness,))
    (source,) = _query(bank, "SELECT id FROM sources WHERE path = ?", str(original))[0]
    rows, sessions = bank_rows(bank), _sessions(bank)
    fresh = tmp_path / "fresh.sqlite"
    scan(home, fresh, (harness,), env={"HOME": str(home)})
    assert bank_rows(fresh) == rows  # what reparse must give back: a fresh scan of the intact originals

    pristine = tmp_path / "pristine"
    shutil.copytree(archive_dir(bank), pristine)
    shutil.copy2(bank, tmp_path / "pristine.sqlite")
    away = original.with_name(original.name + ".away")
    rng = random.Random(shape)
    cases = 0
    for target in _archived_files(bank, source):
        relative = target.relative_to(archive_dir(bank))
        for how, damage in _damages(target.stat().st_size, rng):
            for file_kept in (True, False):
                shutil.rmtree(archive_dir(bank))
                shutil.copytree(pristine, archive_dir(bank))
                shutil.copy2(tmp_path / "pristine.sqlite", bank)
                damage(archive_dir(bank) / relative)
                if not file_kept:
                    original.rename(away)  # the same inode back after: the source's cursor still fits it
                try:
                    report = _reparse(bank, harness)
                finally:
                    if not file_kept:
                        away.rename(original)
                case = f"{shape}: {relative} {how}, agent's file {'kept' if file_kept else 'gone'}"
                assert bank_rows(bank) == rows, case
                assert _sessions(bank) == sessions, case
                done = {s.path: s for s in report.sources}[str(original)]
                if file_kept:
                    assert done.how in ("archive", "file") and not done.damage, case
                    assert done.mended or how.startswith("flip"), case
                elif not how.startswith("flip"):  # a flipped bit zstd ignores (a frame's window size) harms nothing
                    assert done.how == "damaged" and done.damage, case
                cases += 1
    assert cases >= 40
