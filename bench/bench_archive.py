"""The raw archive's size beside its sources' size, for every real-capture tree (``fixtures/*/real/``: what
the real agents wrote here) and the benchmark tree of ``bench/bench_scan.py``.

The archive keeps appended files as zstd frames (one per committed chunk: a few bytes of frame header each),
documents in every version read, and database rows once each; so its size depends on the agent's format.
And how fast it is checked: every frame and blob decompressed and held against its digest, as reparse
reads them (harvester/capture/archive/integrity.py's survey of every source).

    python bench/bench_archive.py [--tree bench/out/claude-tree]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvester import log


def by_harness(bank: Path) -> dict[str, tuple[int, int]]:
    """Per harness: (bytes of the sources as last read, bytes the archive holds for them)."""
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for harness, size, archived in conn.execute("""
                SELECT s.harness, max(s.size, 0),
                       coalesce((SELECT sum(length) FROM archive_frames f WHERE f.source_id = s.id), 0)
                     + coalesce((SELECT sum(size) FROM archive_docs d WHERE d.source_id = s.id), 0)
                FROM sources s WHERE s.format != 'unknown'"""):
            out[harness][0] += size
            out[harness][1] += archived
        return {k: (v[0], v[1]) for k, v in sorted(out.items())}
    finally:
        conn.close()


def check_rate(bank_path: Path) -> tuple[int, float]:
    """Bytes of archive checked, and the seconds it took: every source's frames and blobs (none damaged)."""
    import time

    from harvester.bank import open_bank
    from harvester.capture.archive.integrity import survey

    bank = open_bank(bank_path)
    try:
        conn = bank.conn  # type: ignore[attr-defined]
        size = bank.archive_stats()["size_bytes"]
        started = time.perf_counter()
        for (source,) in conn.execute("SELECT id FROM sources").fetchall():
            assert survey(bank.archive, conn, source) == []  # type: ignore[attr-defined]
        return size, time.perf_counter() - started
    finally:
        bank.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent / "out" / "claude-tree")
    args = parser.parse_args()
    log.configure("error")
    from tests.machine import real_capture_bank

    with tempfile.TemporaryDirectory() as tmp:
        rows = by_harness(real_capture_bank(Path(tmp)))
        print(f"{'real capture':<20} {'sources':>12} {'archive':>12} {'ratio':>7}")
        for harness, (size, archived) in rows.items():
            print(f"{harness:<20} {size:>12,} {archived:>12,} {archived / size if size else 0:>7.1%}")
        total = [sum(r[i] for r in rows.values()) for i in (0, 1)]
        print(f"{'all':<20} {total[0]:>12,} {total[1]:>12,} {total[1] / total[0]:>7.1%}")
        checked = [(total[0], *check_rate(Path(tmp) / "capture-bank.sqlite"))]
        if (args.tree / "projects").is_dir():
            from bench.bench_scan import scan_pass

            scan_pass(args.tree, Path(tmp), archive=True)
            size, archived = by_harness(Path(tmp) / "bank.sqlite")["claude-code"]
            print(f"{'benchmark tree':<20} {size:>12,} {archived:>12,} {archived / size:>7.1%}")
            checked.append((size, *check_rate(Path(tmp) / "bank.sqlite")))
        for name, (sources, size, seconds) in zip(("real capture", "benchmark tree"), checked, strict=False):
            print(f"checked ({name}): {size / 1e6:.1f} MB of archive ({sources / 1e6:.1f} MB of sources) in "
                  f"{seconds:.2f} s: {sources / 1e6 / seconds:.0f} MB/s of sources")


if __name__ == "__main__":
    main()
