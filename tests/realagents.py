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
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE = REPO_ROOT / ".cache" / "agents"
DUMMY_KEY = "dummy"
MODEL = "fake-model"
# Variables that could point an agent at a real account, a real config dir or a real endpoint.
SCRUB_PREFIXES = (
    "XDG_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_", "QWEN_", "OPENCODE_", "KILO_",
    "CONTINUE_", "AIDER_", "LITELLM_",
)  # fmt: skip
SCRUB_SUFFIXES = ("_API_KEY", "_BASE_URL", "_API_BASE", "_AUTH_TOKEN")
SCRUB_NAMES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "AWS_PROFILE", "NODE_OPTIONS", "VIRTUAL_ENV")
# Aider has no config file here: every choice is a flag (no update check, analytics, commits, .gitignore).
AIDER_FLAGS = (
    f"--model=openai/{MODEL}", "--yes-always", "--no-show-model-warnings", "--no-check-update",
    "--analytics-disable", "--no-gitignore", "--no-auto-commits",
)  # fmt: skip
# opencode and its fork Kilo: no models.dev fetch, no self-update, no LSP download, no share links.
OPENCODE_OFF = ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "SHARE")
KILO_OFF = ("SESSION_INGEST", "PRESENCE", "CODEBASE_INDEXING")  # Kilo's own cloud features


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # our name for it ("claude-code"); fixtures live in fixtures/<name with _>/
    package: str  # npm package, or the PyPI distribution when ``pip``
    version: str
    binary: str  # executable name in node_modules/.bin (npm) or the venv's bin/ (pip)
    home_dir: str  # its store root relative to HOME ("" when the store lives in the repo)
    pip: bool = False

    @property
    def install_dir(self) -> Path:
        return CACHE / f"{self.package}@{self.version}"

    @property
    def executable(self) -> Path:
        if self.pip:
            return self.install_dir / "venv" / "bin" / self.binary
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
    if spec.executable.exists():
        return spec.executable
    spec.install_dir.mkdir(parents=True, exist_ok=True)
    if spec.pip:
        venv = spec.install_dir / "venv"
        _quiet([sys.executable, "-m", "venv", str(venv)], timeout)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
        _quiet([*pip, f"{spec.package}=={spec.version}"], timeout)
    else:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH")
        npm_install = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(spec.install_dir)]
        _quiet([*npm_install, f"{spec.package}@{spec.version}"], timeout)
    if not spec.executable.exists():
        raise RuntimeError(f"installed {spec.package}@{spec.version} but {spec.executable} is missing")
    return spec.executable


def _quiet(argv: list[str], timeout: float) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


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
    return env


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
            # The local cost map: litellm would otherwise download model prices at import.
            "aider": {
                "OPENAI_API_BASE": f"{url}/v1",
                "OPENAI_API_KEY": DUMMY_KEY,
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            },
        }[spec.name]
    )
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
    raise KeyError(name)


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
    return subprocess.Popen(
        [str(install(agent)), *args],
        cwd=cwd,
        # PWD too: opencode and Kilo take their project directory from it, not from getcwd().
        env={**agent_env(agent, home, port), "PWD": str(cwd)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
