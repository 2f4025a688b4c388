"""Gemini CLI: which directory a session's project is (its cwd), from the files beside the chats.

- Slug folders (0.29+): ``tmp/<slug>/.project_root`` holds the path (``projectRegistry.ts``).
- sha256 folders (before, and any not migrated): ``tmp/<sha256 of the path>``; ``projects.json``
  lists known paths, else any path the session names leads to the project through its ancestors
  (``paths.ts`` ``getProjectHash``). Sources: ``fixtures/gemini_cli/SOURCE.md``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from harvester.model import SessionPatch
    from harvester.parsers.base import SourceRef


class _Reader(Protocol):
    """What these functions use of harvester/parsers/gemini_cli.py's reader (named here, not imported from there:
    that module imports this one)."""

    ref: SourceRef
    state: dict[str, Any]

    def patch(self) -> SessionPatch: ...

HASH_DIR = re.compile(r"^[0-9a-f]{64}$")


def project_folder(path: PurePath) -> PurePath:
    """``<root>/tmp/<slug or hash>`` of a file under its ``chats`` folder."""
    parts = path.parts
    return PurePath(*parts[:len(parts) - 1 - parts[::-1].index("chats")])


def project_marker(path: PurePath) -> PurePath:
    """A slug folder's ``.project_root`` names its path; for a sha256 folder, ``projects.json``."""
    folder = project_folder(path)
    return folder.parent.parent / "projects.json" if HASH_DIR.match(folder.name) else folder / ".project_root"


def registered_project(reader: _Reader) -> None:
    """The marker beside the chats (slug folders), or the registry's paths (sha256 folders)."""
    sidecar = reader.ref.sidecar
    if sidecar and not HASH_DIR.match(project_folder(reader.ref.path).name):
        _set_cwd(reader, sidecar.decode("utf-8", "replace").strip())
    elif sidecar:
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):  # keys are paths: hashed
            find_project(reader, map(str, orjson.loads(sidecar).get("projects") or {}))


def find_project(reader: _Reader, candidates: Iterable[str]) -> None:
    """The project root is the path whose sha256 is the header's projectHash (paths.ts
    getProjectHash); any path inside the project leads to it through its ancestors."""
    wanted = reader.state.get("hash")
    if reader.state.get("cwd_known") or not isinstance(wanted, str):
        return
    import hashlib  # here: status imports every parser for its roots; OpenSSL's is a cost of its own

    for candidate in candidates:
        for path in _ancestors(candidate):
            if hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest() == wanted:
                _set_cwd(reader, path)
                return


def _set_cwd(reader: _Reader, path: str) -> None:
    if path:
        reader.state["cwd_known"] = True
        reader.patch().cwd = path


def _ancestors(path: str) -> list[str]:
    pure: PurePath = PureWindowsPath(path) if re.match(r"^[A-Za-z]:\\", path) else PurePosixPath(path)
    return [str(pure), *map(str, pure.parents)] if pure.is_absolute() and len(path) < 4096 else []
