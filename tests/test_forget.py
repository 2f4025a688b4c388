"""``harvester forget`` is for good: killed at any point (kill -9), the next command that opens the bank
finishes it; the files ``export`` wrote go too; a fork or a resume that copies the forgotten records does not
bring their text back. "Gone" is checked the way someone looking for it would: ``strings`` over every file of
the bank's directory (the bank, its log, the archive, decompressed).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from harvester.model import MAX_EVENT_TEXT
from tests.helpers import ClaudeSession, sessions_of
from tests.machine import harvester_cli, harvester_env

# No secret the redactor knows (what forget is for), and one word to the search index, whose terms are its words
# lowercased: the index keeps a term after the first on a page as what it adds to the one before, so it is looked
# for by its tail.
WORD = "qzplumzebra4417"
TAIL = WORD[-11:]


def _where_found(tmp: Path, word: str = TAIL) -> list[str]:
    """Every file of the bank's directory holding ``word``: as ``strings -a`` sees it, and decompressed."""
    found = []
    for path in sorted(p for p in tmp.rglob("*") if (p.is_file() and p.name.startswith("bank"))
                       or ("bank.archive" in p.parts and p.is_file())):
        out = subprocess.run(["strings", "-a", str(path)], capture_output=True, text=True, check=True).stdout
        data = path.read_bytes()
        if path.suffix == ".zst" or "blobs" in path.parts or "texts" in path.parts:
            with contextlib.suppress(zstandard.ZstdError):
                data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
        if word in out or word.encode() in data:
            found.append(str(path.relative_to(tmp)))
    return found


def _forgettable(tmp: Path) -> tuple[ClaudeSession, ClaudeSession]:
    home = tmp / "home"
    forgotten = ClaudeSession(home, "/work/app")
    forgotten.write(forgotten.user(f"the staging password is {WORD}, keep it handy"), forgotten.assistant("noted"),
                    forgotten.tool_use("Bash", {"command": "cat env"}, "t1"),
                    forgotten.tool_result("t1", "x" * (MAX_EVENT_TEXT + 10) + f" {WORD}"))  # whole in the archive
    kept = ClaudeSession(home, "/work/app")
    kept.write(*kept.conversation(2))
    assert harvester_cli(tmp, "scan").returncode == 0
    assert _where_found(tmp)  # the bank, the archive's stream and its whole text hold it
    return forgotten, kept


def _forget(tmp: Path, session: str, stop: str | None = None) -> subprocess.CompletedProcess:
    env = harvester_env(tmp)
    if stop:
        env["HARVESTER_TEST_FORGET_STOP"] = stop
    return subprocess.run([sys.executable, "-m", "harvester", "forget", session, "--yes"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp)


@pytest.mark.parametrize(("stop", "next_command"), [
    ("committed", ["status"]),  # after the bank's commit, before the archive's files went
    ("archive-purged", ["search", "hello"]),  # the archive done, the index still holding the terms
    ("index-merged", ["scan"]),  # the index merged, the log not yet emptied
])
def test_a_forget_killed_at_any_point_is_finished_by_the_next_command(tmp_path: Path, stop: str,
                                                                       next_command: list[str]) -> None:
    forgotten, kept = _forgettable(tmp_path)
    killed = _forget(tmp_path, forgotten.id, stop)
    assert killed.returncode == -9, killed.stdout + killed.stderr  # it stopped there
    after = harvester_cli(tmp_path, *next_command)
    assert after.returncode == 0, after.stderr
    assert _where_found(tmp_path) == []
    assert [s["native_id"] for s in sessions_of(tmp_path / "bank.sqlite")] == [kept.id]



def _export(tmp: Path, repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harvester", "export", "--repo", str(repo), *args],
                          env=harvester_env(tmp), capture_output=True, text=True, timeout=120, cwd=repo)


def test_forget_removes_the_files_export_wrote_and_says_which_it_could_not(tmp_path: Path) -> None:
    from harvester.recall.export import file_name
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "demo-repo")
    forgotten = ClaudeSession(tmp_path / "home", str(repo))
    forgotten.write(forgotten.user(f"the staging password is {WORD}"), forgotten.assistant("noted"))
    kept = ClaudeSession(tmp_path / "home", str(repo))
    kept.write(*kept.conversation(1))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    history, elsewhere, third = repo / ".harvester" / "history", tmp_path / "jsonl", tmp_path / "third"
    assert _export(tmp_path, repo).returncode == 0
    assert _export(tmp_path, repo, "--to", str(elsewhere), "--format", "jsonl").returncode == 0
    assert _export(tmp_path, repo, "--to", str(third)).returncode == 0
    theirs = third / file_name("claude-code", forgotten.id, "md")
    theirs.unlink()
    theirs.symlink_to(tmp_path / "home")  # not a file export wrote: never removed, never followed, said

    done = harvester_cli(tmp_path, "forget", forgotten.id, "--yes")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in history.iterdir()) == [file_name("claude-code", kept.id, "md")]
    assert sorted(p.name for p in elsewhere.iterdir()) == [file_name("claude-code", kept.id, "jsonl")]
    assert str(history / file_name("claude-code", forgotten.id, "md")) in done.stdout
    assert f"could not remove {theirs}: not a regular file" in done.stdout, done.stdout
    assert (tmp_path / "home").is_dir() and theirs.is_symlink()


def test_a_later_export_removes_the_files_of_forgotten_sessions(tmp_path: Path) -> None:
    """A clone made before the forget holds the session's file, committed: the next export there removes it."""
    import shutil

    from harvester.recall.export import file_name
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "demo-repo")
    forgotten = ClaudeSession(tmp_path / "home", str(repo))
    forgotten.write(forgotten.user(f"the staging password is {WORD}"), forgotten.assistant("noted"))
    kept = ClaudeSession(tmp_path / "home", str(repo))
    kept.write(*kept.conversation(1))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert _export(tmp_path, repo).returncode == 0
    clone = tmp_path / "clone-history"
    shutil.copytree(repo / ".harvester" / "history", clone)
    assert harvester_cli(tmp_path, "forget", forgotten.id, "--yes").returncode == 0

    done = _export(tmp_path, repo, "--to", str(clone))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in clone.iterdir()) == [file_name("claude-code", kept.id, "md")]
    assert f"removed {clone / file_name('claude-code', forgotten.id, 'md')}" in done.stdout, done.stdout


def test_a_forget_killed_before_the_exported_files_went_is_finished_by_the_next_command(tmp_path: Path) -> None:
    from harvester.recall.export import file_name
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "demo-repo")
    forgotten = ClaudeSession(tmp_path / "home", str(repo))
    forgotten.write(forgotten.user(f"the staging password is {WORD}"), forgotten.assistant("noted"))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert _export(tmp_path, repo).returncode == 0
    exported = repo / ".harvester" / "history" / file_name("claude-code", forgotten.id, "md")
    assert _forget(tmp_path, forgotten.id, "archive-purged").returncode == -9
    assert exported.exists()  # killed before it got there
    assert harvester_cli(tmp_path, "status").returncode == 0
    assert not exported.exists() and _where_found(tmp_path) == []


def _fork_of(parent: ClaudeSession, lines: list[bytes], home: Path, cwd: str) -> ClaudeSession:
    """What ``claude --fork-session`` writes: the parent's records, uuids included, under the fork's id."""
    import orjson

    fork = ClaudeSession(home, cwd)
    fork.parent = parent.parent
    copied = [orjson.dumps({**orjson.loads(line), "sessionId": fork.id, "cwd": cwd}) + b"\n" for line in lines]
    fork.write(*copied, fork.user("and now the fork's own question"), fork.assistant("the fork's own answer"))
    return fork


def _texts(tmp: Path, native_id: str) -> list[str]:
    from tests.helpers import events_of

    return [e["text"] for e in events_of(tmp / "bank.sqlite", native_id)]


def test_a_fork_read_after_the_forget_does_not_bring_the_forgotten_records_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    parent = ClaudeSession(home, "/work/app")
    lines = [parent.user(f"the staging password is {WORD}, keep it handy"), parent.assistant("noted, the password")]
    parent.write(*lines)
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert harvester_cli(tmp_path, "forget", parent.id, "--yes").returncode == 0

    fork = _fork_of(parent, lines, home, "/work/app")  # forked (or resumed into a copy) after the forget
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert _texts(tmp_path, fork.id) == ["and now the fork's own question", "the fork's own answer"]
    assert _where_found(tmp_path) == []  # nor in the archive of the fork's file
    assert harvester_cli(tmp_path, "reparse").returncode == 0  # nor from the archive, nor from the fork's file
    assert _texts(tmp_path, fork.id) == ["and now the fork's own question", "the fork's own answer"]
    assert _where_found(tmp_path) == []


def test_a_copy_already_in_the_bank_loses_the_forgotten_records_too(tmp_path: Path) -> None:
    """A fork made in another directory is not linked to its parent (nothing names it): forgetting the parent
    takes its records out of the copy all the same, and the copy's own stay."""
    home = tmp_path / "home"
    parent = ClaudeSession(home, "/work/app")
    lines = [parent.user(f"the staging password is {WORD}, keep it handy"), parent.assistant("noted, the password")]
    parent.write(*lines)
    fork = _fork_of(parent, lines, home, "/work/app-worktree")
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert len(_texts(tmp_path, fork.id)) == 4

    done = harvester_cli(tmp_path, "forget", parent.id, "--yes")
    assert done.returncode == 0, done.stderr
    assert _texts(tmp_path, fork.id) == ["and now the fork's own question", "the fork's own answer"]
    assert _where_found(tmp_path) == []
    assert harvester_cli(tmp_path, "reparse").returncode == 0  # the fork's file still holds them: kept out
    assert _texts(tmp_path, fork.id) == ["and now the fork's own question", "the fork's own answer"]
    assert _where_found(tmp_path) == []


def test_a_forget_moves_the_banks_change_clock(tmp_path: Path) -> None:
    """What watches the change clock (an open page of `harvester serve` lists sessions again when it moves) must see a
    forget: it deleted the sessions without moving the clock, so the list kept the forgotten one."""
    import sqlite3

    forgotten, _ = _forgettable(tmp_path)
    bank = tmp_path / "bank.sqlite"

    def clock() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{bank}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT n FROM change_clock").fetchone()[0]

    before = clock()
    assert _forget(tmp_path, forgotten.id).returncode == 0
    assert clock() > before
