"""Where things live, and the few settings that change them.

Zero configuration is the normal case: every value has a default, and environment variables (then
command-line options) override it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

APP = "harvester"
DEFAULT_BANK_ID_TEMPLATE = "coding-agent::{gitProject}"
BANK_ENV = "HARVESTER_BANK"
BANK_ID_TEMPLATE_ENV = "HARVESTER_BANK_ID_TEMPLATE"
LOG_LEVEL_ENV = "HARVESTER_LOG_LEVEL"


def default_bank_path() -> Path:
    return platformdirs.user_data_path(APP) / "bank.sqlite"


def bank_path(option: str | None = None, env: Mapping[str, str] = os.environ) -> Path:
    if option:
        return Path(option).expanduser()
    if env.get(BANK_ENV):
        return Path(env[BANK_ENV]).expanduser()
    return default_bank_path()


def bank_id_template(option: str | None = None, env: Mapping[str, str] = os.environ) -> str:
    return option or env.get(BANK_ID_TEMPLATE_ENV) or DEFAULT_BANK_ID_TEMPLATE


def home(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get("HOME") or Path.home())
