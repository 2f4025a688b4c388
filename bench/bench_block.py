"""How long the current five-hour block takes on a bank of a million events (issue 27/28 follow-up): read from its
own start (``harvester.usage.api.current_block``) beside the whole history's ``blocks`` report it must equal.

    python bench/bench_block.py --bank COPY-OF/bank-1000000.sqlite [--rounds 5]

The bank comes from bench/gen_bank.py; give a copy (a read-only bank an older harvester left is refused, and
this opens it to migrate it). ``now`` is five minutes after the bank's last response, so a block is running; the
figures are medians of the rounds, in one process, with the price book warmed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from harvester.bank import open_bank
from harvester.usage import api


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    spent, found = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        found = call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bank", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    open_bank(args.bank, archive=False).close()  # migrated once, as `harvester scan` would
    with api.open_usage(args.bank) as conn:
        (last,) = conn.execute("SELECT max(ts) FROM usage WHERE counted = 1").fetchone()
    now = datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(minutes=5)
    harness = "codex"

    def whole(harnesses: tuple[str, ...]) -> Any:
        data = api.report(args.bank, api.Request("blocks", harnesses=harnesses), now=now)
        return next((b for b in data["blocks"] if b["active"]), None)

    cases: dict[str, Callable[[], Any]] = {
        "whole history, every agent": lambda: whole(()),
        "current_block, every agent": lambda: api.current_block(args.bank, now=now),
        f"whole history, {harness}": lambda: whole((harness,)),
        f"current_block, {harness}": lambda: api.current_block(args.bank, now=now, harnesses=(harness,)),
        "current_block, nothing in the last five hours": lambda: api.current_block(args.bank,
                                                                                   now=now + timedelta(hours=6)),
    }
    whole(())  # the price book warmed
    for name, call in cases.items():
        seconds, found = timed(call, args.rounds)
        shown = found and (found["start"], found["responses"]) if isinstance(found, dict) else found and (
            found.start.isoformat(), found.responses)
        print(f"{name:48} {seconds * 1000:8.0f} ms  {shown}")


if __name__ == "__main__":
    main()
