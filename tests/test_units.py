"""The login service: rendered units are valid, plans hold the right commands and paths, apply does them."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harvester.service import units
from harvester.status import unit as unit_state

ROOT = Path(__file__).resolve().parent.parent
UID = os.getuid()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    home = tmp_path / "my home"  # a space, so shell quoting shows in the printed commands
    home.mkdir()
    return home


def verify(unit: Path, runtime: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.fail(
            "systemd-analyze is not installed; it comes with Debian's systemd package: "
            "apt-get install -y --no-install-recommends systemd"
        )
    runtime.mkdir(mode=0o700, exist_ok=True)
    # --user needs a runtime directory, even with no user manager running (as in a container).
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    return subprocess.run(
        [tool, "--user", "verify", str(unit)], capture_output=True, text=True, env=env, timeout=60
    )


def write_unit(folder: Path, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    unit = folder / unit_state.SERVICE  # verify checks the unit under its real name
    unit.write_text(text)
    return unit


def test_systemd_unit_passes_verify(home: Path, tmp_path: Path) -> None:
    plan = units.install_plan(home, platform="systemd")
    result = verify(write_unit(tmp_path / "unit", plan.unit_text), tmp_path / "run")
    # verify exits 0 on an unknown key or a bad value and only warns, so any output is a failure too.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_verify_reports_what_systemd_would_ignore(home: Path, tmp_path: Path) -> None:
    text = units.install_plan(home, platform="systemd").unit_text.replace("MemoryMax=1G", "MemoryMax=lots")
    result = verify(write_unit(tmp_path / "unit", text), tmp_path / "run")
    assert "Invalid memory limit 'lots'" in result.stderr


def test_systemd_unit_settings(home: Path) -> None:
    lines = units.install_plan(home, platform="systemd").unit_text.splitlines()
    for line in [
        "[Service]",
        f"ExecStart={os.path.abspath(sys.executable)} -m harvester run",
        "Restart=on-failure",
        "RestartSec=30",
        "Nice=10",
        "IOSchedulingClass=idle",
        "CPUSchedulingPolicy=batch",
        "MemoryHigh=512M",
        "MemoryMax=1G",
        "Environment=PYTHONUNBUFFERED=1",
        "[Install]",
        "WantedBy=default.target",
    ]:
        assert line in lines
    assert any(line.startswith("Description=") for line in lines)


def test_awkward_interpreter_path_is_quoted(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "py thon 100%" / "bin"
    folder.mkdir(parents=True)
    (folder / "python").symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(folder / "python"))
    text = units.install_plan(home, platform="systemd").unit_text
    assert f'ExecStart="{tmp_path}/py thon 100%%/bin/python" -m harvester run' in text
    result = verify(write_unit(tmp_path / "unit", text), tmp_path / "run")  # it checks the binary exists
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_venv_interpreter_is_not_resolved(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A venv's python is a symlink; its target would run outside the venv, without harvester.
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(venv_python))
    assert f"ExecStart={venv_python} -m" in units.install_plan(home, platform="systemd").unit_text
    plist = plistlib.loads(units.install_plan(home, platform="launchd").unit_text.encode())
    assert plist["ProgramArguments"][0] == str(venv_python)


def test_launchd_plist(home: Path) -> None:
    plist = plistlib.loads(units.install_plan(home, platform="launchd").unit_text.encode())
    log = str(home / "Library" / "Logs" / "harvester" / "harvester.log")
    assert plist["Label"] == "io.harvester.agent"
    assert plist["ProgramArguments"] == [os.path.abspath(sys.executable), "-m", "harvester", "run"]
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["ProcessType"] == "Background"
    assert plist["LowPriorityIO"] is True
    assert plist["Nice"] == 10
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == log
    assert plist["EnvironmentVariables"]["PYTHONUNBUFFERED"] == "1"


def test_plist_escapes_xml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "a & <b>"
    monkeypatch.setattr(sys, "executable", "/opt/R&D/python")
    plist = plistlib.loads(units.install_plan(home, platform="launchd").unit_text.encode())
    assert plist["ProgramArguments"][0] == "/opt/R&D/python"
    assert plist["StandardOutPath"].startswith(str(home))


def test_templates_ship_with_the_package() -> None:
    # The top-level service_units/ is the package's folder, so both places show the same templates.
    for name in (unit_state.SERVICE, unit_state.PLIST):
        assert (ROOT / "service_units" / name).read_text() == units.template(name).template


def test_systemd_plans(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unit = home / ".config" / "systemd" / "user" / "harvester.service"
    install = units.install_plan(home, platform="systemd")
    assert (install.platform, install.unit_path, install.action) == ("systemd", unit, "install")
    assert install.commands == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "harvester.service"],
        ["systemctl", "--user", "restart", "harvester.service"],
    ]
    uninstall = units.uninstall_plan(home, platform="systemd")
    assert (uninstall.unit_path, uninstall.action) == (unit, "uninstall")
    assert uninstall.commands == [
        ["systemctl", "--user", "disable", "--now", "harvester.service"],
        ["rm", "-f", str(unit)],
        ["systemctl", "--user", "daemon-reload"],
    ]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    xdg_unit = tmp_path / "xdg" / "systemd" / "user" / "harvester.service"
    assert units.install_plan(home, platform="systemd").unit_path == xdg_unit


def test_launchd_plans(home: Path) -> None:
    plist = home / "Library" / "LaunchAgents" / "io.harvester.agent.plist"
    install = units.install_plan(home, platform="launchd")
    assert (install.platform, install.unit_path) == ("launchd", plist)
    assert install.commands == [
        ["mkdir", "-p", str(home / "Library" / "Logs" / "harvester")],
        ["launchctl", "bootout", f"gui/{UID}/io.harvester.agent"],
        ["launchctl", "bootstrap", f"gui/{UID}", str(plist)],
    ]
    uninstall = units.uninstall_plan(home, platform="launchd")
    assert uninstall.commands == [
        ["launchctl", "bootout", f"gui/{UID}/io.harvester.agent"],
        ["rm", "-f", str(plist)],
    ]


def test_platform_is_detected(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert units.install_plan(home).platform == "launchd"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(units, "user_systemd_available", lambda: (True, "it answers"))
    assert units.install_plan(home).platform == "systemd"
    monkeypatch.setattr(units, "user_systemd_available", lambda: (False, "no user manager runs"))
    plan = units.install_plan(home)
    assert (plan.platform, plan.commands) == ("none", [])
    assert "no user manager runs" in plan.notes[0]
    assert "ExecStart=" in plan.unit_text  # still there, for a dry run to show


def test_no_user_manager_without_a_runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    available, reason = units.user_systemd_available()
    assert not available
    assert reason


class FakeRunner:
    """Records systemctl and launchctl instead of running them; rm and mkdir are harmless, so they run."""

    def __init__(self, fail: dict[str, tuple[int, str]] | None = None) -> None:
        self.ran: list[list[str]] = []
        self.fail = fail or {}

    def __call__(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        self.ran.append(command)
        if command[0] in ("rm", "mkdir"):
            return subprocess.run(command, capture_output=True, text=True)
        code, stderr = self.fail.get(" ".join(command[:3]), (0, ""))
        return subprocess.CompletedProcess(command, code, "", stderr)


def test_dry_run_prints_and_changes_nothing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner()
    monkeypatch.setattr(units, "run_command", runner)
    for platform in ("systemd", "launchd"):
        plan = units.install_plan(home, platform=platform)
        lines: list[str] = []
        assert units.apply(plan, dry_run=True, out=lines.append) == 0
        text = "\n".join(lines)
        assert str(plan.unit_path) in text
        assert plan.unit_text.strip() in text
        for command in plan.commands:
            assert shlex.join(command) in text
        if platform == "launchd":  # the home's space is quoted
            assert f"launchctl bootstrap gui/{UID} '{plan.unit_path}'" in text
    assert runner.ran == []
    assert list(home.iterdir()) == []


def test_apply_writes_the_unit_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner()
    monkeypatch.setattr(units, "run_command", runner)
    plan = units.install_plan(home, platform="systemd")
    lines: list[str] = []
    assert units.apply(plan, dry_run=False, out=lines.append) == 0
    assert plan.unit_path.read_text() == plan.unit_text
    assert f"Wrote {plan.unit_path}" in lines
    assert runner.ran == plan.commands
    written = plan.unit_path.stat().st_mtime_ns
    lines.clear()
    assert units.apply(plan, dry_run=False, out=lines.append) == 0
    assert f"{plan.unit_path} is up to date" in lines
    assert plan.unit_path.stat().st_mtime_ns == written
    assert runner.ran == plan.commands * 2

    uninstall = units.uninstall_plan(home, platform="systemd")
    assert units.apply(uninstall, dry_run=False, out=lines.append) == 0
    assert not plan.unit_path.exists()


def test_launchd_apply_tolerates_nothing_loaded(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_loaded = (3, "Boot-out failed: 3: No such process")
    runner = FakeRunner(fail={f"launchctl bootout gui/{UID}/io.harvester.agent": not_loaded})
    monkeypatch.setattr(units, "run_command", runner)
    plan = units.install_plan(home, platform="launchd")
    lines: list[str] = []
    assert units.apply(plan, dry_run=False, out=lines.append) == 0
    assert runner.ran == plan.commands
    assert "  (nothing was loaded: fine)" in lines
    assert (home / "Library" / "Logs" / "harvester").is_dir()
    assert plistlib.loads(plan.unit_path.read_bytes())["Label"] == "io.harvester.agent"
    assert units.apply(units.uninstall_plan(home, platform="launchd"), dry_run=False, out=lines.append) == 0
    assert not plan.unit_path.exists()


def test_a_failed_command_stops_with_its_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner(fail={"systemctl --user enable": (1, "Failed to enable unit: Access denied")})
    monkeypatch.setattr(units, "run_command", runner)
    plan = units.install_plan(home, platform="systemd")
    lines: list[str] = []
    assert units.apply(plan, dry_run=False, out=lines.append) == 1
    assert "Failed (exit 1): Failed to enable unit: Access denied" in lines
    assert runner.ran == plan.commands[:2]  # the restart after it did not run


def test_no_service_manager_says_so(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FakeRunner()
    monkeypatch.setattr(units, "run_command", runner)
    monkeypatch.setattr(units, "user_systemd_available", lambda: (False, "no user manager runs"))
    monkeypatch.setattr(sys, "platform", "linux")
    plan = units.install_plan(home)
    lines: list[str] = []
    assert units.apply(plan, dry_run=False, out=lines.append) == 1
    assert lines == [
        "harvester cannot be installed as a login service here: no user manager runs.",
        "Run `harvester run` yourself instead (in a terminal, tmux or screen); it keeps the "
        "bank current for as long as it runs.",
    ]
    lines.clear()
    assert units.apply(plan, dry_run=True, out=lines.append) == 0  # a dry run shows it anyway: not a failure
    assert plan.unit_text.strip() in "\n".join(lines)
    assert lines[-2].startswith("harvester cannot be installed")
    assert list(home.iterdir()) == []
    assert runner.ran == []


def test_uninstall_dry_run_does_not_claim_to_remove_what_is_not_there(home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(units, "run_command", FakeRunner())
    plan = units.uninstall_plan(home, platform="systemd")
    lines: list[str] = []
    assert units.apply(plan, dry_run=True, out=lines.append) == 0
    assert lines[0] == f"No unit at {plan.unit_path}: nothing to remove"
    plan.unit_path.parent.mkdir(parents=True)
    plan.unit_path.write_text("x")
    lines.clear()
    assert units.apply(plan, dry_run=True, out=lines.append) == 0
    assert lines[0] == f"Would remove {plan.unit_path}"


def test_install_and_uninstall_dry_run_exit_0_where_no_user_manager_runs(tmp_path: Path) -> None:
    """A container, CI, a server without a login session: XDG_RUNTIME_DIR points nowhere useful."""
    import os

    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "no-manager")}
    for command in ("install", "uninstall"):
        result = subprocess.run([sys.executable, "-m", "harvester", command, "--dry-run"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "cannot be" in result.stdout and "login service here" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def fake_query(
    stdout: str = "", returncode: int = 0, stderr: str = "", timeout: bool = False
) -> Callable[[list[str]], subprocess.CompletedProcess[str]]:
    def query(command: list[str]) -> subprocess.CompletedProcess[str]:
        if timeout:
            raise subprocess.TimeoutExpired(command, unit_state.QUERY_TIMEOUT)
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)

    return query


def test_service_state_systemd(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unit_state, "runtime_problem", lambda: "")
    monkeypatch.setattr(unit_state, "_query", fake_query("inactive\n", 3))
    state = unit_state.service_state(home, platform="systemd")
    assert state == {
        "platform": "systemd",
        "installed": False,
        "state": "inactive",
        "reason": "",
        "unit_path": str(home / ".config/systemd/user/harvester.service"),
    }
    Path(state["unit_path"]).parent.mkdir(parents=True)
    Path(state["unit_path"]).write_text("x")
    monkeypatch.setattr(unit_state, "_query", fake_query("active\n"))
    assert unit_state.service_state(home, platform="systemd")["installed"] is True
    assert unit_state.service_state(home, platform="systemd")["state"] == "active"
    monkeypatch.setattr(unit_state, "_query", fake_query(timeout=True))
    state = unit_state.service_state(home, platform="systemd")
    assert state["state"] == "unknown"
    assert state["reason"] == "systemctl --user is-active harvester.service did not answer within 2 s"
    monkeypatch.setattr(unit_state, "runtime_problem", lambda: "no user manager runs")
    assert unit_state.service_state(home, platform="systemd")["reason"] == "no user manager runs"


def test_service_state_launchd(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unit_state, "_query", fake_query("gui/501/io.harvester.agent = {\n\tstate = running\n}\n"))
    assert unit_state.service_state(home, platform="launchd")["state"] == "running"
    monkeypatch.setattr(unit_state, "_query", fake_query(returncode=113, stderr='Could not find service "x"'))
    state = unit_state.service_state(home, platform="launchd")
    assert state["state"] == "not loaded"
    assert state["unit_path"] == str(home / "Library" / "LaunchAgents" / "io.harvester.agent.plist")
    monkeypatch.setattr(unit_state, "_query", fake_query(timeout=True))
    assert unit_state.service_state(home, platform="launchd")["state"] == "unknown"


def test_service_state_on_this_machine_never_raises() -> None:
    state = unit_state.service_state()
    assert set(state) == {"platform", "unit_path", "installed", "state", "reason"}
    assert state["state"] != "unknown" or state["reason"]
