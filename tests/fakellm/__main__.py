"""``python -m tests.fakellm [--port N] [--log FILE]``: serve in the foreground, print the port."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.fakellm.server import FakeLLM


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakellm", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--log", type=Path, help="append every request as one JSON line to this file")
    args = parser.parse_args(argv)
    fake = FakeLLM(port=args.port, log=args.log).start()
    print(fake.port, flush=True)
    print(f"fakellm listening on {fake.base_url}", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
