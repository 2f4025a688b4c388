"""``harvester status`` says which agents delete their own history, from their settings files.

Every value and rule asserted here is one the agent itself applies: ``fixtures/retention/SOURCE.md``
names the upstream file and version for each.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from harvester import retention
from harvester.cli import cli
from harvester.parsers import HARNESSES

# Variables that move an agent's files: none may leak in from the machine running the tests.
AGENT_VARIABLES = ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_COWORK_PLUGINS", "GEMINI_CLI_HOME",
                   "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "XDG_CONFIG_HOME",
                   "XDG_DATA_HOME", "OPENCLAW_CONFIG_PATH", "OPENCLAW_STATE_DIR", "OPENCLAW_HOME",
                   "OPENCLAW_PROFILE", "PI_CODING_AGENT_DIR", "PI_CONFIG_DIR", "OMP_PROFILE", "PI_PROFILE",
                   "APPDATA")


@pytest.fixture(autouse=True)
def _no_system_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own /etc/claude-code and /etc/gemini-cli must not decide a test."""
    monkeypatch.setattr(retention, "CLAUDE_MANAGED_DIR", tmp_path / "etc" / "claude-code")
    monkeypatch.setattr(retention, "GEMINI_SYSTEM_DIR", tmp_path / "etc" / "gemini-cli")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def found(home: Path, harness: str, env: dict[str, str] | None = None) -> list[retention.Retention]:
    return [w for w in retention.warnings(env or {}, home) if w.harness == harness]


def lines(home: Path, harness: str, env: dict[str, str] | None = None) -> list[str]:
    return [retention.describe(w, home) for w in found(home, harness, env)]


def claude_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    return home


# ---------------------------------------------------------------------------------------- Claude Code


def test_claude_code_settings_file_sets_seven_days(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    settings = write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 7, "model": "opus"}')
    [warning] = found(home, "claude-code")
    assert (warning.value, warning.default, warning.file) == (7, False, str(settings))
    assert lines(home, "claude-code") == [
        "claude-code deletes sessions older than 7 days (cleanupPeriodDays in ~/.claude/settings.json)"
        " — harvester's archive keeps them"]


def test_claude_code_without_settings_the_default_applies(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    [warning] = found(home, "claude-code")
    assert (warning.value, warning.default, warning.file) == (30, True, None)
    assert lines(home, "claude-code") == [
        "claude-code deletes sessions older than 30 days (cleanupPeriodDays, default; ~/.claude/settings.json"
        " sets none) — harvester's archive keeps them"]


def test_claude_code_follows_claude_config_dir(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    write(moved / "settings.json", '{"cleanupPeriodDays": 90}')
    write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 2}')  # not read: the variable moved it
    [warning] = found(home, "claude-code", {"CLAUDE_CONFIG_DIR": str(moved)})
    assert (warning.value, warning.file) == (90, str(moved / "settings.json"))


def test_claude_code_project_settings_override_when_started_there(tmp_path: Path) -> None:
    """A project's value applies whenever Claude Code starts in it, and its cleanup covers every project."""
    home = claude_home(tmp_path)
    shop, blog, same = tmp_path / "shop", tmp_path / "blog", tmp_path / "same"
    write(home / ".claude.json", json.dumps({"projects": {str(p): {} for p in (shop, blog, same)}}))
    write(shop / ".claude" / "settings.json", '{"cleanupPeriodDays": 14}')
    local = write(shop / ".claude" / "settings.local.json", '{"cleanupPeriodDays": 3}')  # local wins
    write(same / ".claude" / "settings.json", '{"cleanupPeriodDays": 30}')  # no different from the user's
    user, project = found(home, "claude-code")
    assert user.value == 30 and user.default
    assert (project.value, project.file, project.default) == (3, str(local), False)
    assert retention.describe(project, home) == (
        f"claude-code started in {shop} deletes sessions older than 3 days, every project's "
        f"(cleanupPeriodDays in {local}) — harvester's archive keeps them")


def test_claude_code_managed_settings_win(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 7}')
    managed = write(retention.CLAUDE_MANAGED_DIR / "managed-settings.d" / "20-retention.json",
                    '{"cleanupPeriodDays": 365}')
    write(retention.CLAUDE_MANAGED_DIR / "managed-settings.json", '{"cleanupPeriodDays": 60}')
    [warning] = found(home, "claude-code")
    assert (warning.value, warning.file) == (365, str(managed))  # drop-ins after the base file


@pytest.mark.parametrize("value", ["0", "-5", "7.5", '"never"', "true"])
def test_claude_code_invalid_value_skips_the_cleanup(tmp_path: Path, value: str) -> None:
    """0 is refused since 2.1.89; an invalid, explicitly set value stops the whole cleanup."""
    home = claude_home(tmp_path)
    write(home / ".claude" / "settings.json", f'{{"cleanupPeriodDays": {value}}}')
    [warning] = found(home, "claude-code")
    assert warning.deletes.startswith("skips its cleanup while cleanupPeriodDays is")
    assert warning.value == json.loads(value)


def test_claude_code_settings_that_do_not_parse_are_named_not_raised(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 7,}')  # strict JSON: no trailing comma
    [warning] = found(home, "claude-code")
    assert warning.value == 30 and warning.default  # Claude Code ignores the file: its default applies
    [line] = lines(home, "claude-code")
    assert line.startswith("claude-code deletes sessions older than 30 days (cleanupPeriodDays, default; "
                           "could not read ~/.claude/settings.json: ")


def test_claude_code_not_installed_says_nothing(tmp_path: Path) -> None:
    assert found(tmp_path / "home", "claude-code") == []


# ----------------------------------------------------------------------------------------- Gemini CLI


def test_gemini_cli_defaults_to_thirty_days(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", '// mine\n{"general": {"vimMode": true}}')
    [warning] = found(home, "gemini-cli")
    assert (warning.setting, warning.value, warning.default) == ("general.sessionRetention.maxAge", "30d", True)
    assert lines(home, "gemini-cli") == [
        "gemini-cli deletes the sessions of each project, when started there, older than 30 days "
        "(general.sessionRetention.maxAge, default; ~/.gemini/settings.json sets none) — harvester's archive "
        "keeps them"]


def test_gemini_cli_settings_with_comments_set_max_age_and_count(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = write(home / ".gemini" / "settings.json",
                     '{\n  // keep a week\n  "general": {"sessionRetention": {"maxAge": "1w", "maxCount": 50}}\n}')
    [warning] = found(home, "gemini-cli")
    assert (warning.value, warning.file) == ("1w", str(settings))
    assert "older than 1 week and beyond the newest 50" in warning.deletes


@pytest.mark.parametrize("block", ['{"enabled": false}', '{"maxAge": "12h"}', '{"maxAge": "0d"}',
                                   '{"maxAge": "30 days"}', '{"maxCount": 0}'])
def test_gemini_cli_cleanup_off_or_refused_is_no_warning(tmp_path: Path, block: str) -> None:
    """Disabled, shorter than minRetention (1d), unreadable maxAge, maxCount < 1: Gemini cleans nothing."""
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", f'{{"general": {{"sessionRetention": {block}}}}}')
    assert found(home, "gemini-cli") == []


def test_gemini_cli_system_settings_override_the_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", '{"general": {"sessionRetention": {"maxAge": "90d"}}}')
    system = write(tmp_path / "admin.json", '{"general": {"sessionRetention": {"maxAge": "2d"}}}')
    [warning] = found(home, "gemini-cli", {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)})
    assert (warning.value, warning.file) == ("2d", str(system))


def test_gemini_cli_project_settings_apply_to_that_project(tmp_path: Path) -> None:
    home, shop = tmp_path / "home", tmp_path / "shop"
    write(home / ".gemini" / "projects.json", json.dumps({"projects": {str(shop): "shop"}}))
    project = write(shop / ".gemini" / "settings.json", '{"general": {"sessionRetention": {"maxAge": "3d"}}}')
    user, in_shop = found(home, "gemini-cli")
    assert user.value == "30d"
    assert (in_shop.value, in_shop.file) == ("3d", str(project))
    assert f"of {shop}, when started there (if it trusts that folder), older than 3 days" in in_shop.deletes


def test_gemini_cli_settings_that_do_not_parse(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".gemini" / "settings.json", '{"general": {"sessionRetention": ')
    [line] = lines(home, "gemini-cli")
    assert "does not start while its settings do not parse" in line
    assert "could not read ~/.gemini/settings.json" in line


# ------------------------------------------------------------------------------------ Kilo, Kilo Code


def test_kilo_retention_is_off_unless_enabled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "kilo" / "kilo.jsonc", '{"retention": {"maxAgeDays": 5},}')
    assert found(home, "kilo") == []


def test_kilo_retention_enabled_with_its_default_days(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = write(home / ".config" / "kilo" / "kilo.jsonc", '{\n // on\n "retention": {"enabled": true},\n}')
    [warning] = found(home, "kilo")
    assert (warning.value, warning.default) == (30, True)
    assert f"retention.enabled in {retention._shown(str(config), home)}" in warning.deletes


def test_kilo_retention_later_file_wins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "kilo" / "config.json", '{"retention": {"enabled": true, "maxAgeDays": 5}}')
    later = write(home / ".config" / "kilo" / "opencode.jsonc", '{"retention": {"maxAgeDays": 12}}')
    [warning] = found(home, "kilo")
    assert (warning.value, warning.file) == (12, str(later))


def kilo_code_state(home: Path, state: object) -> Path:
    storage = home / ".config" / "Code" / "User" / "globalStorage"
    (storage / "kilocode.kilo-code").mkdir(parents=True)
    database = storage / "state.vscdb"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        conn.execute("INSERT INTO ItemTable VALUES (?, ?)", ("kilocode.kilo-code", json.dumps(state)))
    conn.close()
    return database


def test_kilo_code_auto_purge_when_enabled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    database = kilo_code_state(home, {"autoPurgeEnabled": True, "autoPurgeIncompleteTaskRetentionDays": 3})
    before = database.read_bytes()
    [warning] = found(home, "kilo-code")
    assert warning.deletes == ("deletes completed tasks older than 30 days, unfinished ones older than 3 days "
                               "(favourites kept)")
    assert warning.file == str(database) and database.read_bytes() == before


def test_kilo_code_auto_purge_off_by_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    kilo_code_state(home, {"autoPurgeDefaultRetentionDays": 30})
    assert found(home, "kilo-code") == []


# ------------------------------------------------------------------------------------ OpenClaw, oh-my-pi


def test_openclaw_defaults(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".openclaw" / "agents").mkdir(parents=True)
    maintenance, cron = found(home, "openclaw")
    assert maintenance.default and maintenance.value == {"pruneAfter": "30d", "maxDiskBytes": "10gb"}
    assert (cron.setting, cron.value, cron.default) == ("cron.sessionRetention", "24h", True)


def test_openclaw_json5_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = write(home / ".openclaw" / "openclaw.json", """{
      // JSON5, as OpenClaw writes it
      session: { maintenance: { pruneAfter: '7d', maxDiskBytes: false, }, },
      cron: { sessionRetention: "0h" },
    }""")
    [warning] = found(home, "openclaw")
    assert (warning.file, warning.default) == (str(config), False)
    assert warning.deletes == "deletes runtime sessions (cron, hooks, heartbeat, sub-agents) idle longer than 7d"


def test_openclaw_warn_mode_deletes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".openclaw" / "openclaw.json", '{session: {maintenance: {mode: "warn"}}, cron: {sessionRetention: false}}')
    assert found(home, "openclaw") == []


def test_openclaw_config_that_does_not_parse(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".openclaw" / "openclaw.json", "{session: ")
    [line] = lines(home, "openclaw")
    assert "could not read ~/.openclaw/openclaw.json" in line


def test_json5_reader() -> None:
    text = "{a: 0x1F, 'b': [+1, -.5, Infinity,], c: 'it\\'s', /* x */ d: null}"
    assert retention.files._Json5(text).document() == {"a": 31, "b": [1, -0.5, float("inf")], "c": "it's", "d": None}


def test_oh_my_pi_rewrites_tool_results_by_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".omp" / "agent" / "config.yml", "compaction:\n  dropUseless: false\n")
    [warning] = found(home, "oh-my-pi")
    assert warning.setting == "compaction.supersedeReads" and warning.default
    assert "file reads a later read superseded" in warning.deletes


def test_oh_my_pi_both_off(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".omp" / "agent" / "config.yml",
          "compaction.supersedeReads: false\ncompaction:\n  dropUseless: false\n")
    assert found(home, "oh-my-pi") == []


def test_warp_keeps_its_200_latest_conversations_once_installed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert found(home, "warp") == []  # not installed: no warp.sqlite in any of its roots
    write(home / ".local" / "state" / "warp-terminal" / "warp.sqlite", "")
    (warning,) = found(home, "warp")
    assert (warning.value, warning.default) == (200, True)
    assert "200 most recent agent conversations" in lines(home, "warp")[0]


def test_every_policy_names_a_harness() -> None:
    assert set(retention.harness_names()) <= set(HARNESSES)


def test_reading_writes_nothing(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 7}')
    write(home / ".gemini" / "settings.json", "{}")
    before = sorted(p for p in tmp_path.rglob("*"))
    retention.warnings({}, home)
    assert sorted(p for p in tmp_path.rglob("*")) == before


# ---------------------------------------------------------------------------------------- status


def status(home: Path, bank: Path, *args: str) -> str:
    env: dict[str, str | None] = {"HOME": str(home), **dict.fromkeys(AGENT_VARIABLES)}
    for command in (["scan"], ["status", *args]):
        result = CliRunner().invoke(cli, ["--bank", str(bank), *command], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return result.stdout


def test_status_json_lists_the_retention_warnings(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    write(home / ".claude" / "settings.json", '{"cleanupPeriodDays": 7}')
    data = orjson.loads(status(home, tmp_path / "bank.sqlite", "--json"))
    [entry] = [r for r in data["retention"] if r["harness"] == "claude-code"]
    assert (entry["setting"], entry["value"], entry["default"]) == ("cleanupPeriodDays", 7, False)
    assert entry["file"] == str(home / ".claude" / "settings.json")
    assert entry["text"].endswith("— harvester's archive keeps them")


def test_status_text_has_the_block_after_the_harness_table(tmp_path: Path) -> None:
    home = claude_home(tmp_path)
    text = status(home, tmp_path / "bank.sqlite")
    block = text.index("History the agents delete on their own:")
    assert text.index("HARNESS") < block < text.index("Recent imports:")
    assert ("  claude-code deletes sessions older than 30 days (cleanupPeriodDays, default; "
            "~/.claude/settings.json sets none) — harvester's archive keeps them") in text.splitlines()


def test_status_without_agents_that_delete_has_no_block(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    text = status(home, tmp_path / "bank.sqlite")
    assert "History the agents delete on their own" not in text
    assert orjson.loads(status(home, tmp_path / "bank2.sqlite", "--json"))["retention"] == []
