"""``[sinks.hindsight]``: where the bank is forwarded, and what of it.

    [sinks.hindsight]
    url = "http://127.0.0.1:8888"
    token_env = "HINDSIGHT_API_TOKEN"       # the variable that holds the API token (never the token here)
    bank_template = "coding-agent::{gitProject}"  # Hindsight's own bank names, by default
    harnesses = ["claude-code", "codex"]    # forward only these (default: every harness)...
    exclude_harnesses = ["aider"]           # ...never these
    banks = ["coding-agent::*"]             # forward only banks matching these (shell patterns)...
    exclude_banks = ["coding-agent::scratch"]   # ...never these
    converge = false                        # a session Hindsight's own hooks already filed: skip it (true: take it over)

    [sinks.hindsight.bank."coding-agent::secret"]
    retain_sessions = false                 # this bank opts out: nothing of it is sent, by run or by backfill

Checked like every other setting (harvester/config/common.py): an unknown key, a value of the wrong type, a URL
that is not http(s), a template with an unknown placeholder are a ConfigError naming the file and key.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from harvester.config import common as c  # the checks and messages every setting uses

DEFAULT_BANK_TEMPLATE = "coding-agent::{gitProject}"
KEYS = ("banks", "bank", "bank_template", "converge", "exclude_banks", "exclude_harnesses", "harnesses",
        "token_env", "url")
BANK_KEYS = ("retain_sessions",)


@dataclass(slots=True)
class HindsightSettings:
    url: str
    token_env: str | None = None
    bank_template: str = DEFAULT_BANK_TEMPLATE
    harnesses: list[str] | None = None  # None: every harness
    exclude_harnesses: list[str] = field(default_factory=list)
    banks: list[str] | None = None  # None: every bank
    exclude_banks: list[str] = field(default_factory=list)
    opted_out: list[str] = field(default_factory=list)  # banks whose retain_sessions = false
    converge: bool = False

    def token(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The API token, read from the named variable when it is needed (never stored, logged or shown)."""
        return (env.get(self.token_env) or None) if self.token_env else None

    def harness_allowed(self, harness: str) -> bool:
        return (self.harnesses is None or harness in self.harnesses) and harness not in self.exclude_harnesses

    def bank_refusal(self, bank: str) -> str | None:
        """Why nothing of ``bank`` is forwarded (its opt-out, a deny or allow list), or None."""
        if bank in self.opted_out:
            return "opted out (retain_sessions = false)"
        if any(fnmatch.fnmatchcase(bank, p) for p in self.exclude_banks):
            return "excluded by exclude_banks"
        if self.banks is not None and not any(fnmatch.fnmatchcase(bank, p) for p in self.banks):
            return "not in banks"
        return None

    def describe(self) -> list[tuple[str, Any]]:
        """For ``harvester config``: the token by the variable's name only."""
        return [("url", self.url), ("token_env", self.token_env), ("bank_template", self.bank_template),
                ("harnesses", self.harnesses or "all"), ("exclude_harnesses", self.exclude_harnesses),
                ("banks", self.banks or "all"), ("exclude_banks", self.exclude_banks),
                ("opted_out", self.opted_out), ("converge", self.converge)]


def bank_for(template: str, session: Mapping[str, Any]) -> str:
    """The sink's bank of a session (a bank row's fields), filled as harvester.gitident.bank_id fills the
    bank's own template: {gitProject} the repository's name, {project} the cwd's name, {harness}."""
    cwd = session.get("cwd")
    project = os.path.basename(os.path.normpath(cwd)) if cwd else "unknown"
    return (template.replace("{gitProject}", session.get("project") or project or "unknown")
            .replace("{project}", project or "unknown").replace("{harness}", session.get("harness") or ""))


def parse_sinks(where: str, value: Any, harness_names: Collection[str]) -> dict[str, HindsightSettings]:
    """The ``[sinks]`` table of the config file (``where`` names it in messages)."""
    table = c._table(where, value, "a table of sinks")
    c._only_known_keys(where, table, ("hindsight",))
    out: dict[str, HindsightSettings] = {}
    if "hindsight" in table:
        out["hindsight"] = _hindsight(f"{where}.hindsight", c._table(f"{where}.hindsight", table["hindsight"],
                                                                        "a table"), harness_names)
    return out


def _hindsight(where: str, t: dict[str, Any], harness_names: Collection[str]) -> HindsightSettings:
    c._only_known_keys(where, t, KEYS)
    if "url" not in t:
        raise c.ConfigError(f'{where}: expected a url (such as "http://127.0.0.1:8888"), got none')
    url = c._nonempty_string(f"{where}.url", t["url"], "a URL").rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise c._wrong_value(f"{where}.url", "an http:// or https:// URL", url)
    s = HindsightSettings(url=url)
    if "token_env" in t:
        s.token_env = c._nonempty_string(f"{where}.token_env", t["token_env"], "an environment variable's name")
    if "bank_template" in t:
        s.bank_template = c._template(f"{where}.bank_template", t["bank_template"])
    for key in ("harnesses", "exclude_harnesses"):
        if key in t:
            names = c._array(f"{where}.{key}", t[key], "an array of harness names")
            setattr(s, key, [c._harness_name(f"{where}.{key}", n, harness_names) for n in names])
    for key in ("banks", "exclude_banks"):
        if key in t:
            items = c._array(f"{where}.{key}", t[key], "an array of bank ids or patterns")
            setattr(s, key, [c._nonempty_string(f"{where}.{key}", b, "a bank id or pattern") for b in items])
    if "converge" in t:
        s.converge = c._boolean(f"{where}.converge", t["converge"])
    if "bank" in t:
        banks = c._table(f"{where}.bank", t["bank"], 'a table of "bank id" = { retain_sessions = ... }')
        for bank, options in banks.items():
            here = f'{where}.bank."{bank}"'
            options = c._table(here, options, "a table")
            c._only_known_keys(here, options, BANK_KEYS)
            if "retain_sessions" in options and not c._boolean(f"{here}.retain_sessions", options["retain_sessions"]):
                s.opted_out.append(bank)
    return s
