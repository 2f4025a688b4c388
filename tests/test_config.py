"""Configuration cannot silently do nothing: every mistake in the file, the environment or an option is
one line naming where it is, the key, the value and what is valid, and exit code 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from harvester import config
from harvester.cli import cli
from harvester.gitident import RepoIdentity, bank_id
from harvester.parsers import HARNESSES
from tests.daemon import FAST, ROOT, Daemon

VALID_HARNESSES = ", ".join(sorted(HARNESSES))
VALID_PLACEHOLDERS = "{gitProject}, {project}, {harness}"
# What the CLI reads besides its options; each test names the values it means, and removes the rest.
CLEAN_ENV = dict.fromkeys((config.BANK_ENV, config.BANK_ID_TEMPLATE_ENV, config.LOG_LEVEL_ENV, config.CONFIG_ENV))


def load_file(tmp_path: Path, text: str, **env: str) -> config.Settings:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return config.load({config.CONFIG_ENV: str(path), "HOME": str(tmp_path), **env}, harness_names=HARNESSES)


def file_error(tmp_path: Path, text: str) -> str:
    """The message for this config file, without the file's path that starts it."""
    with pytest.raises(config.ConfigError) as caught:
        load_file(tmp_path, text)
    message = str(caught.value)
    prefix = f"{tmp_path / 'config.toml'}: "
    assert message.startswith(prefix), message
    return message[len(prefix):]


def invoke(tmp_path: Path, *args: str, config_text: str | None = None, **env: str):
    path = tmp_path / "config.toml"
    if config_text is not None:
        path.write_text(config_text)
    return CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.sqlite"), *args],
                              env={**CLEAN_ENV, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                                   **({config.CONFIG_ENV: str(path)} if config_text is not None else {}), **env})


# --- harness names: in `harnesses` and as `[roots]` keys ---

def test_a_mistyped_harness_is_named_with_the_close_match_and_every_valid_name(tmp_path: Path) -> None:
    assert file_error(tmp_path, 'harnesses = ["codex", "claude"]\n') == (
        f'harnesses: unknown harness "claude" (did you mean "claude-code"? valid: {VALID_HARNESSES})')


def test_a_harness_nothing_resembles_gets_the_valid_names_only(tmp_path: Path) -> None:
    assert file_error(tmp_path, 'harnesses = ["zzzz"]\n') == f'harnesses: unknown harness "zzzz" (valid: {VALID_HARNESSES})'


def test_the_one_name_a_short_harness_begins_is_suggested(tmp_path: Path) -> None:
    """difflib finds "roo" too short to resemble "roo-code"; it is the only name "roo" begins."""
    assert file_error(tmp_path, 'harnesses = ["roo"]\n') == (
        f'harnesses: unknown harness "roo" (did you mean "roo-code"? valid: {VALID_HARNESSES})')


def test_no_harness_at_all_would_capture_nothing(tmp_path: Path) -> None:
    assert file_error(tmp_path, "harnesses = []\n") == (
        "harnesses: expected at least one harness name (leave harnesses out to capture every agent), got []")


def test_roots_for_an_unknown_harness_are_the_same_typo(tmp_path: Path) -> None:
    assert file_error(tmp_path, '[roots]\nclaude = ["/mnt/old/.claude/projects"]\n') == (
        f'roots: unknown harness "claude" (did you mean "claude-code"? valid: {VALID_HARNESSES})')


# --- keys ---

FILE_KEYS = ("archive, archive_max_age, archive_max_size, bank, bank_id_template, exclude, harnesses, limits, "
             "log_level, roots, sinks, team, team_bank, timings")


@pytest.mark.parametrize(("text", "expected"), [
    ('bank_id_templat = "x"\n', 'unknown key "bank_id_templat" (did you mean "bank_id_template"? valid: '
                                f"{FILE_KEYS})"),
    ("[timing]\npoll_seconds = 5\n", f'unknown key "timing" (did you mean "timings"? valid: {FILE_KEYS})'),
    ("[timings]\ndebounce = 20\n", 'timings: unknown key "debounce" (did you mean "debounce_ms"? valid: '
                                   "debounce_ms, heartbeat_seconds, idle_end_minutes, poll_seconds, quiet_seconds, "
                                   "recent_minutes, reconcile_minutes, unfinished_seconds)"),
    ("[limits]\nmax_decompressed = 16\n", 'limits: unknown key "max_decompressed" (did you mean '
                                          '"max_decompressed_mb"? valid: max_decompressed_mb)'),
])
def test_an_unknown_key_is_named_with_the_close_match(tmp_path: Path, text: str, expected: str) -> None:
    assert file_error(tmp_path, text) == expected


def test_archive_settings_are_read_with_their_units(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('archive = false\narchive_max_age = "26w"\narchive_max_size = "1.5GB"\n')
    settings = config.load({config.CONFIG_ENV: str(path), "HOME": str(tmp_path)}, harness_names=HARNESSES)
    assert (settings.archive, settings.archive_max_age_days, settings.archive_max_size_bytes) == (False, 182, 1_500_000_000)
    assert config.load({"HOME": str(tmp_path), config.CONFIG_ENV: ""}, harness_names=HARNESSES).archive is True  # on by default


# --- types and ranges, key by key ---

@pytest.mark.parametrize(("text", "expected"), [
    ("bank = 3\n", "bank: expected a path (a string), got 3 (an integer)"),
    ('archive = "no"\n', 'archive: expected true or false, got "no" (a string)'),
    ('archive_max_age = 30\n', 'archive_max_age: expected an age such as "90d", "26w" or "1y" (a string), got 30 '
                               "(an integer)"),
    ('archive_max_age = "30 days"\n', 'archive_max_age: unknown unit "days" (valid: d, w, y)'),
    ('archive_max_size = "-5GB"\n', 'archive_max_size: expected a size such as "500MB" or "20GB", got "-5GB"'),
    ('archive_max_size = "20 gigs"\n', 'archive_max_size: unknown unit "gigs" (valid: KB, MB, GB, TB, KiB, MiB, GiB, '
                                       "TiB)"),
    ('bank = ""\n', 'bank: expected a path, got ""'),
    ('bank = "bank.sqlite"\n', 'bank: expected an absolute path (or one starting with ~), got "bank.sqlite"'),
    ("bank_id_template = true\n", "bank_id_template: expected a template (a string), got true (a boolean)"),
    ('bank_id_template = ""\n', 'bank_id_template: expected a template, got ""'),
    ('harnesses = "codex"\n', 'harnesses: expected an array of harness names, got "codex" (a string)'),
    ('harnesses = ["codex", 3]\n', "harnesses: expected a harness name (a string), got 3 (an integer)"),
    ('exclude = "/secret"\n', 'exclude: expected an array of paths, got "/secret" (a string)'),
    ("exclude = [[1]]\n", "exclude: expected a path (a string), got an array"),
    ('exclude = ["secret"]\n', 'exclude: expected an absolute path (or one starting with ~), got "secret"'),
    ("log_level = 10\n", "log_level: expected a log level (a string), got 10 (an integer)"),
    ('roots = "/x"\n', 'roots: expected a table of harness = [paths], got "/x" (a string)'),
    ('[roots]\ncodex = "/x"\n', 'roots.codex: expected an array of paths, got "/x" (a string)'),
    ('[roots]\ncodex = ["rel"]\n', 'roots.codex: expected an absolute path (or one starting with ~), got "rel"'),
    ("timings = 5\n", "timings: expected a table, got 5 (an integer)"),
    ('[timings]\npoll_seconds = "5"\n', 'timings.poll_seconds: expected a positive number, got "5" (a string)'),
    ("[timings]\npoll_seconds = true\n", "timings.poll_seconds: expected a positive number, got true (a boolean)"),
    ("[timings]\nheartbeat_seconds = 0\n", "timings.heartbeat_seconds: expected a positive number, got 0"),
    ("[timings]\nidle_end_minutes = -1.5\n", "timings.idle_end_minutes: expected a positive number, got -1.5"),
    ("[timings]\nquiet_seconds = nan\n", "timings.quiet_seconds: expected a positive number, got nan"),
    ("[timings]\nrecent_minutes = inf\n", "timings.recent_minutes: expected a positive number, got inf"),
    ("[timings]\ndebounce_ms = 1979-05-27\n",
     "timings.debounce_ms: expected a positive number, got 1979-05-27 (a date/time)"),
    ("limits = []\n", "limits: expected a table, got an array"),
    ("[limits]\nmax_decompressed_mb = 1.5\n",
     "limits.max_decompressed_mb: expected a positive whole number, got 1.5 (a float)"),
    ("[limits]\nmax_decompressed_mb = 0\n", "limits.max_decompressed_mb: expected a positive whole number, got 0"),
])
def test_a_value_of_the_wrong_type_or_range_names_key_value_and_type(tmp_path: Path, text: str,
                                                                     expected: str) -> None:
    assert file_error(tmp_path, text) == expected


def test_a_config_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.load({config.CONFIG_ENV: str(tmp_path)}, harness_names=HARNESSES)
    assert str(caught.value) == f"$HARVESTER_CONFIG: {tmp_path} is not a file"


# --- log levels ---

def test_a_bad_log_level_from_the_file_gets_the_valid_levels(tmp_path: Path) -> None:
    assert file_error(tmp_path, 'log_level = "warn"\n') == (
        'log_level: unknown log level "warn" (did you mean "warning"? valid: debug, info, warning, error)')


def test_a_bad_log_level_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError) as caught:
        load_file(tmp_path, "", **{config.LOG_LEVEL_ENV: "verbose"})
    assert str(caught.value) == '$HARVESTER_LOG_LEVEL: unknown log level "verbose" (valid: debug, info, warning, error)'


def test_log_levels_are_read_in_any_case_and_kept_in_lower_case(tmp_path: Path) -> None:
    assert load_file(tmp_path, 'log_level = "DEBUG"\n').log_level == "debug"
    assert load_file(tmp_path, "", **{config.LOG_LEVEL_ENV: "Error"}).log_level == "error"


# --- the bank id template, from the file, the environment or the option ---

@pytest.mark.parametrize(("template", "problem"), [
    ("{nope}", f'unknown placeholder "{{nope}}" in "{{nope}}" (valid: {VALID_PLACEHOLDERS})'),
    ("coding-agent::{gitproject}", 'unknown placeholder "{gitproject}" in "coding-agent::{gitproject}" '
                                   f'(did you mean "{{gitProject}}"? valid: {VALID_PLACEHOLDERS})'),
    ("work::{}", f'unknown placeholder "{{}}" in "work::{{}}" (valid: {VALID_PLACEHOLDERS})'),
    ("coding-agent::{gitProject", 'unmatched "{" in "coding-agent::{gitProject" '
                                  f"(braces only mark a placeholder: {VALID_PLACEHOLDERS})"),
    ("coding-agent::gitProject}", 'unmatched "}" in "coding-agent::gitProject}" '
                                  f"(braces only mark a placeholder: {VALID_PLACEHOLDERS})"),
    ("{{gitProject}}", f'unmatched "{{" in "{{{{gitProject}}}}" (braces only mark a placeholder: {VALID_PLACEHOLDERS})'),
])
def test_a_bad_template_is_refused_wherever_it_comes_from(tmp_path: Path, template: str, problem: str) -> None:
    escaped = template.replace("\\", "\\\\").replace('"', '\\"')
    assert file_error(tmp_path, f'bank_id_template = "{escaped}"\n') == f"bank_id_template: {problem}"
    with pytest.raises(config.ConfigError) as from_env:
        load_file(tmp_path, "", **{config.BANK_ID_TEMPLATE_ENV: template})
    assert str(from_env.value) == f"$HARVESTER_BANK_ID_TEMPLATE: {problem}"
    with pytest.raises(config.ConfigError) as from_option:
        config.load({config.CONFIG_ENV: str(tmp_path / "config.toml")}, bank_id_template=template, harness_names=HARNESSES)
    assert str(from_option.value) == f"--bank-id-template: {problem}"


def test_an_empty_option_is_a_mistake_not_a_default(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("")
    env = {config.CONFIG_ENV: str(tmp_path / "config.toml")}
    with pytest.raises(config.ConfigError, match=r'^--bank-id-template: expected a template, got ""$'):
        config.load(env, bank_id_template="", harness_names=HARNESSES)
    with pytest.raises(config.ConfigError, match=r'^--bank: expected a path, got ""$'):
        config.load(env, bank="", harness_names=HARNESSES)


def test_templates_with_known_placeholders_or_none_are_kept(tmp_path: Path) -> None:
    """Regression guard (these loaded before, and still must)."""
    for template in ("coding-agent::{gitProject}", "{harness}/{project}@{gitProject}", "everything"):
        assert load_file(tmp_path, "", **{config.BANK_ID_TEMPLATE_ENV: template}).bank_id_template == template


def test_every_placeholder_checked_is_one_bank_id_fills() -> None:
    identity = RepoIdentity(project="shop", root="/r/shop")
    filled = bank_id("".join(f"{{{name}}}" for name in config.common.BANK_ID_PLACEHOLDERS), identity, "/r/shop/sub", "codex")
    assert filled == "shopsubcodex"


def test_the_documented_example_is_a_valid_configuration(tmp_path: Path) -> None:
    """Regression guard: what docs/configuration.md shows must load as it is."""
    page = (ROOT / "docs" / "configuration.md").read_text()
    example = re.search(r"```toml\n(.*?)```", page, re.DOTALL)
    assert example is not None
    settings = load_file(tmp_path, example[1])
    assert settings.harnesses == ["claude-code", "codex"] and settings.limits.max_decompressed_mb == 4096


# --- through the real CLI: one line, exit 2 ---

def test_a_config_file_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke(tmp_path, "scan", config_text='harnesses = ["claude"]\n')
    assert result.exit_code == 2
    assert result.stderr == (f'Error: {tmp_path / "config.toml"}: harnesses: unknown harness "claude" '
                             f'(did you mean "claude-code"? valid: {VALID_HARNESSES})\n')
    assert not (tmp_path / "bank.sqlite").exists()


def test_an_option_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke(tmp_path, "--bank-id-template", "{nope}", "scan")
    assert result.exit_code == 2
    assert result.stderr == (f'Error: --bank-id-template: unknown placeholder "{{nope}}" in "{{nope}}" '
                             f"(valid: {VALID_PLACEHOLDERS})\n")


def test_an_environment_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke(tmp_path, "status", **{config.BANK_ID_TEMPLATE_ENV: "x::{gitProjet}"})
    assert result.exit_code == 2
    assert result.stderr == ('Error: $HARVESTER_BANK_ID_TEMPLATE: unknown placeholder "{gitProjet}" in '
                             f'"x::{{gitProjet}}" (did you mean "{{gitProject}}"? valid: {VALID_PLACEHOLDERS})\n')


def test_a_file_that_is_not_toml_is_exit_2(tmp_path: Path) -> None:
    result = invoke(tmp_path, "scan", config_text="harnesses = [\n")
    assert result.exit_code == 2
    assert result.stderr == f"Error: {tmp_path / 'config.toml'}: not valid TOML: Invalid value (at end of document)\n"


def test_a_missing_file_named_by_the_variable_is_exit_2(tmp_path: Path) -> None:
    result = invoke(tmp_path, "config", **{config.CONFIG_ENV: str(tmp_path / "gone.toml")})
    assert result.exit_code == 2
    assert result.stderr == f"Error: $HARVESTER_CONFIG: {tmp_path / 'gone.toml'} does not exist\n"


def test_control_characters_in_a_bad_value_reach_the_terminal_shown_not_obeyed(tmp_path: Path) -> None:
    result = invoke(tmp_path, "scan", **{config.BANK_ID_TEMPLATE_ENV: "{\x1b]0;pwned\x07}"})
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert '"{␛]0;pwned␇}"' in result.stderr


# --- `harvester config` names the file it read ---

def test_config_names_the_file_it_read_and_who_chose_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = invoke(tmp_path, "config", config_text='log_level = "debug"\n')
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0] == f"# config file: {path} (found; $HARVESTER_CONFIG)"
    shown = orjson.loads(invoke(tmp_path, "config", "--json", config_text="").stdout)
    assert shown["config_file"] == {"value": str(path), "from": "$HARVESTER_CONFIG", "found": True}


def test_config_names_the_default_location_when_there_is_no_file(tmp_path: Path) -> None:
    default = tmp_path / "xdg" / "harvester" / "config.toml"
    text = invoke(tmp_path, "config")
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0] == f"# config file: {default} (none; default location)"
    shown = orjson.loads(invoke(tmp_path, "config", "--json").stdout)
    assert shown["config_file"] == {"value": str(default), "from": "default location", "found": False}


# --- once as a real process (moved here from test_service.py) ---

def test_config_shows_where_each_value_comes_from(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)  # only its environment and `cli`: no service is started
    daemon.config.write_text('bank_id_template = "work::{gitProject}"\nexclude = ["/secret"]\n' + FAST)
    result = daemon.cli("config", "--json")
    assert result.returncode == 0, result.stderr
    shown = orjson.loads(result.stdout)
    assert shown["bank"] == {"value": str(daemon.bank), "from": "$HARVESTER_BANK"}
    assert shown["bank_id_template"] == {"value": "work::{gitProject}", "from": str(daemon.config)}
    assert shown["timings.debounce_ms"] == {"value": 20, "from": str(daemon.config)}
    assert shown["timings.reconcile_minutes"]["value"] == 30
    assert shown["log_level"]["from"] == "$HARVESTER_LOG_LEVEL"
    daemon.config.write_text('no_such_setting = 1\nharnesses = ["claude"]\n')
    bad = daemon.cli("config")
    assert bad.returncode == 2
    assert bad.stderr == (f'Error: {daemon.config}: unknown key "no_such_setting" (valid: archive, archive_max_age, '
                          "archive_max_size, bank, bank_id_template, exclude, harnesses, limits, log_level, roots, sinks, "
                          "team, team_bank, timings)\n")


def test_scan_with_a_mistyped_harness_exits_2_as_a_process(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)
    daemon.config.write_text('harnesses = ["claude"]\n')
    result = subprocess.run([sys.executable, "-m", "harvester", "scan"], env=daemon.env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (f'Error: {daemon.config}: harnesses: unknown harness "claude" '
                             f'(did you mean "claude-code"? valid: {VALID_HARNESSES})\n')


# --- the team bank (harvester/config/team.py) ---

@pytest.mark.parametrize(("text", "expected"), [
    ("team_bank = 5\n", 'team_bank: expected a PostgreSQL URL ("postgresql://user@host/db") (a string), got 5 (an integer)'),
    ('team_bank = "mysql://u:pw@h/db"\n', 'team_bank: expected a postgresql:// URL, got "mysql://u:*****@h/db"'),
    ('[team]\nhost = "x"\n', "team: set team_bank (or $HARVESTER_TEAM_BANK) to the PostgreSQL URL it is for"),
    ('team_bank = "postgresql://h/db"\n[team]\nhots = "x"\n', 'team: unknown key "hots" (did you mean "host"? valid: '
                                                             "bank, host, insecure)"),
    ('team_bank = "postgresql://h/db"\n[team]\ninsecure = "yes"\n',
     'team.insecure: expected true or false, got "yes" (a string)'),
    ('team_bank = "postgresql://h/db"\n[team.bank."coding-agent::x"]\npush = "no"\n',
     'team.bank."coding-agent::x".push: expected true or false, got "no" (a string)'),
])
def test_team_settings_are_checked_and_a_password_is_never_shown(tmp_path: Path, text: str, expected: str) -> None:
    assert file_error(tmp_path, text) == expected


def test_the_team_bank_url_shows_its_password_masked_wherever_it_comes_from(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('team_bank = "postgresql://bob:s3cret@db.example:5432/team"\n'
                    '[team.bank."coding-agent::secret"]\npush = false\n')
    settings = config.load({config.CONFIG_ENV: str(path), "HOME": str(tmp_path)}, harness_names=HARNESSES)
    assert settings.team is not None and settings.team.held_banks == ["coding-agent::secret"]
    shown = {key: (value, origin) for key, value, origin in settings.describe()}
    assert shown["team_bank"] == ("postgresql://bob:*****@db.example:5432/team", str(path))
    assert "s3cret" not in repr(settings.describe())
    from_env = config.load({config.CONFIG_ENV: str(path), "HOME": str(tmp_path),
                            "HARVESTER_TEAM_BANK": "postgresql://ann:pw2@other/db"}, harness_names=HARNESSES)
    assert from_env.team is not None and from_env.team.url == "postgresql://ann:pw2@other/db"
    assert {k: o for k, _, o in from_env.describe()}["team_bank"] == "$HARVESTER_TEAM_BANK"
    assert config.load({"HOME": str(tmp_path), config.CONFIG_ENV: ""}, harness_names=HARNESSES).team is None  # none by default
