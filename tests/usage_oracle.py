"""ccusage, the reference `harvester usage` is checked against (tests/test_usage_parity.py): installed from npm into
the shared cache by the machinery that installs the agent CLIs (tests/realagents.py: a lock per package, the same
prefix layout), and run offline.

Which ccusage: 20.0.26, the newest in the registry, cannot run here (its linux-x64 native binary,
``@ccusage/ccusage-linux-x64@20.0.26``, is not in the registry); 20.0.24 is the newest whose binary is. Since
20.0 ccusage is one Rust binary reading Claude Code, Codex, opencode and more (``ccusage claude|codex|opencode
daily``); ``@ccusage/codex`` and ``@ccusage/opencode`` 19.0.0 are stubs that print "use npx ccusage instead" and
exit 1, so the Codex and opencode parity is checked against ``ccusage codex`` and ``ccusage opencode``. The
loader package ``ccusage`` only finds its binary through an optional dependency; the platform package is
installed beside it and run directly (as droid's in realagents).

Offline: ``--offline`` prices from the LiteLLM snapshot built into the binary (and its embedded models.dev
fallback), and never fetches (rust/crates/ccusage/src/pricing.rs: the LiteLLM and models.dev fetches run only
without it). :func:`run` also takes the network away: in a user and network namespace of its own
(``unshare -rn``) where the machine allows one, else with every proxy variable pointing at a closed port.

``python -m tests.usage_oracle install`` warms the cache (what `.ci/run` does in the background).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.realagents import Agent, install

CCUSAGE = Agent("ccusage", "@ccusage/ccusage-linux-x64", "20.0.24", "ccusage", "",
                bin_path="@ccusage/ccusage-linux-x64/bin/ccusage")
# Where nothing listens: a proxy-honouring client that tried to fetch would fail at once.
DEAD_PROXY = "http://127.0.0.1:9"


@functools.cache
def _isolated() -> list[str]:
    """The command prefix that takes the network away, where the machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def installed() -> Path:
    """The ccusage binary, installed (once) and executable: the platform package ships it without the mode bit
    (its loader package sets it when it first runs it; npm links no bin for it)."""
    executable = install(CCUSAGE)
    mode = executable.stat().st_mode
    if mode & 0o111 != 0o111:
        executable.chmod(mode | 0o111)
    return executable


def run(args: list[str], home: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    """``ccusage <args> --offline --json --timezone UTC`` with ``home`` as HOME; its JSON answer."""
    executable = installed()
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TZ": "UTC", "LANG": "C.UTF-8", "NO_COLOR": "1",
               **{name: DEAD_PROXY for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                                                 "https_proxy", "all_proxy")},
               **(env or {})}
    argv = [*_isolated(), str(executable), *args, "--offline", "--json", "--timezone", "UTC"]
    done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"ccusage {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        print("usage: python -m tests.usage_oracle install", file=sys.stderr)
        sys.exit(2)
    print(f"tests/usage_oracle: {installed()}", flush=True)
