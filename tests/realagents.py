"""Install real agent CLIs into a cache and run them offline against :mod:`tests.fakellm`.

Every run gets the HOME and cwd the caller passes (use fresh temporary ones), stdin from /dev/null, a
timeout, and an environment scrubbed of XDG_*, agent home overrides and real API keys / base URLs.
See /work/shared/realagents.md for how each agent was set up; ``AGENTS`` holds what was verified here.

Typical use::

    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        home, repo = Path(tmp, "home"), make_repo(Path(tmp))
        write_config("codex", home, llm.port)
        run("codex", prompt_args("codex", "say hi"), cwd=repo, home=home, port=llm.port)
        files = sorted(store_root("codex", home).glob("sessions/**/rollout-*.jsonl"))
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE = REPO_ROOT / ".cache" / "agents"
DUMMY_KEY = "dummy"
# Variables that could point an agent at a real account, a real config dir or a real endpoint.
SCRUB_PREFIXES = ("XDG_", "ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_", "QWEN_")
SCRUB_SUFFIXES = ("_API_KEY", "_BASE_URL", "_API_BASE", "_AUTH_TOKEN")
SCRUB_NAMES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "AWS_PROFILE", "NODE_OPTIONS")


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # our name for it ("claude-code")
    package: str  # npm package
    version: str
    binary: str  # executable name in node_modules/.bin
    home_dir: str  # its store root relative to HOME

    @property
    def install_dir(self) -> Path:
        return CACHE / f"{self.package}@{self.version}"

    @property
    def executable(self) -> Path:
        return self.install_dir / "node_modules" / ".bin" / self.binary


AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent("claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude", ".claude"),
        Agent("codex", "@openai/codex", "0.171.0", "codex", ".codex"),
    )
}


def _agent(agent: str | Agent) -> Agent:
    return agent if isinstance(agent, Agent) else AGENTS[agent]


def install(agent: str | Agent, timeout: float = 900) -> Path:
    """Install the pinned version with npm into the git-ignored cache (once); return its executable."""
    spec = _agent(agent)
    if spec.executable.exists():
        return spec.executable
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")
    spec.install_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(spec.install_dir),
         f"{spec.package}@{spec.version}"],
        check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
    )  # fmt: skip
    if not spec.executable.exists():
        raise RuntimeError(f"npm installed {spec.package}@{spec.version} but {spec.executable} is missing")
    return spec.executable


def store_root(agent: str | Agent, home: Path) -> Path:
    """Where the agent keeps its native store under ``home`` (``~/.claude``, ``~/.codex``)."""
    return home / _agent(agent).home_dir


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
    env = clean_env(home)
    if spec.name == "claude-code":
        env.update(
            {
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                "ANTHROPIC_API_KEY": DUMMY_KEY,
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
        )
    elif spec.name == "codex":
        env.update({"CODEX_HOME": str(store_root(spec, home)), "FAKELLM_API_KEY": DUMMY_KEY})
    return env


def write_config(agent: str | Agent, home: Path, port: int) -> None:
    """Create ``home`` and the agent's config files pointing at the fake server on ``port``."""
    spec = _agent(agent)
    root = store_root(spec, home)
    root.mkdir(parents=True, exist_ok=True)
    if spec.name == "codex":
        (root / "config.toml").write_text(
            textwrap.dedent(f"""\
                model = "fake-model"
                model_provider = "fakellm"
                check_for_update_on_startup = false

                [model_providers.fakellm]
                name = "fakellm"
                base_url = "http://127.0.0.1:{port}/v1"
                env_key = "FAKELLM_API_KEY"
                wire_api = "responses"

                [analytics]
                enabled = false
            """)
        )


def prompt_args(agent: str | Agent, prompt: str, resume: bool = False) -> list[str]:
    """Arguments for one non-interactive turn; ``resume`` continues the most recent session in cwd."""
    name = _agent(agent).name
    if name == "claude-code":
        return ["--continue", "-p", prompt] if resume else ["-p", prompt]
    if name == "codex":
        return ["exec", "resume", "--last", prompt] if resume else ["exec", prompt]
    raise KeyError(name)


def make_repo(parent: Path, name: str = "demo-repo") -> Path:
    """A fresh git repo with one committed file, ``notes.txt``."""
    repo = parent / name
    repo.mkdir(parents=True)
    (repo / "notes.txt").write_text("These are the demo notes.\nThe secret word is pelican.\n")
    git = ["git", "-c", "user.name=Demo", "-c", "user.email=demo@example.invalid", "-C", str(repo)]
    for args in (["init", "-q", "-b", "main"], ["add", "notes.txt"], ["commit", "-q", "-m", "notes"]):
        subprocess.run([*git, *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
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
        env=agent_env(agent, home, port),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
