"""Secrets planted in prompts, tool input and tool output never reach the bank file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ClaudeSession, events_of, scan, sessions_of

# Built by concatenation so no literal secret sits in the repository.
AWS_KEY = "AKIA" + "Q3ZT7KEYIDW2XZ4B"  # 20 characters, as AWS issues them
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
ANTHROPIC = "sk-ant-api03-" + "Zx9" * 30 + "AA"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7" + "q" * 64 + "\n-----END RSA PRIVATE KEY-----"
DB_URL_PASSWORD = "S3cr3t-p4ss"


def test_planted_secrets_are_redacted_before_the_bank(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(
        s.user(f"deploy with AWS key {AWS_KEY} and token {GITHUB}"),
        s.tool_use(
            "Bash", {"command": f"curl -H 'Authorization: Bearer {JWT}' https://api.example.com"}, "t1"
        ),
        s.tool_result(
            "t1",
            f"ANTHROPIC_API_KEY={ANTHROPIC}\nDATABASE_URL=postgres://app:{DB_URL_PASSWORD}"
            f"@db.internal:5432/app\n{PEM}\n",
        ),
        s.assistant("Done; I will not repeat the credentials."),
    )
    scan(home, bank)

    raw = b"".join(p.read_bytes() for p in tmp_path.glob("bank.sqlite*"))
    for secret in (AWS_KEY, GITHUB, ANTHROPIC, JWT, "MIIEowIBAAKCAQEA7", DB_URL_PASSWORD):
        assert secret.encode() not in raw, f"{secret[:8]}… reached the bank file"

    text = "\n".join(e["text"] + str(e["tool_input"] or "") for e in events_of(bank))
    for marker in (
        "[REDACTED:aws-access-key",
        "[REDACTED:github-token]",
        "[REDACTED:anthropic-api-key]",
        "[REDACTED:jwt]",
        "[REDACTED:private-key]",
        "[REDACTED:",
    ):
        assert marker in text, marker
    assert "postgres://app:" in text and "@db.internal:5432/app" in text  # only the password goes
    [session] = sessions_of(bank)
    assert session["redactions"] >= 7


# Issue 9: formats that used to reach the bank whole, in every place a transcript carries text. Each is
# built by concatenation at run time; ``parts`` are what must not reach the bank file.
HEX32 = "0123456789abcdef" * 2
AZURE_KEY = "Zm9vYmFy" * 10 + "cXV4cX" + "=="  # 86 base64 characters and "=="
NAMED = {
    "azure-storage-key": ("DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey=" + AZURE_KEY
                          + ";EndpointSuffix=core.windows.net", [AZURE_KEY]),
    "twilio": ("client = Client('AC" + HEX32[::-1] + "', '" + "fe" * 4 + HEX32[8:] + "')",
               ["AC" + HEX32[::-1], "fe" * 4 + HEX32[8:]]),
    "huggingface-token": ("hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", None),
    "npm-token": ("npm_" + "Zq7Lk2Wp9Xc4Vb6Nm1Qs8Ht3Jd5Rf0Gy2Eab", None),
    "sendgrid-api-key": ("SG." + "aB3dE5fG7hJ9kL1mN3pQ5r" + "." + "S7tU9vW1xY3zA5bC7dE9fG1hJ3kL5mN7pQ9rS1tU3vX", None),
    "databricks-token": ("dapi" + "3f9a" + HEX32[4:], None),
}


@pytest.mark.parametrize("name", NAMED)
def test_named_formats_never_reach_the_bank_wherever_they_stand(tmp_path: Path, name: str) -> None:
    secret, parts = NAMED[name]
    parts = parts or [secret]
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    as_json = json.dumps({"status": "ok", "stdout": f"line one\n{secret}\nline three"})
    s.write(
        s.user(f"use this one: {secret}"),
        s.assistant(f"I found {secret} in the notes; I will not repeat it."),
        s.tool_use("Bash", {"command": f"./deploy.sh --creds '{secret}'"}, "t1"),
        s.tool_result("t1", f"reading config\n{secret}\ndone\n"),
        s.tool_use("Bash", {"command": "gh api /repos/o/r/actions/secrets"}, "t2"),
        s.tool_result("t2", as_json),
        s.tool_use("Bash", {"command": "cat event.json"}, "t3"),
        s.tool_result("t3", json.dumps({"body": as_json})),  # JSON printed inside a string: \" and \\n
    )
    scan(home, bank)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("bank.sqlite*"))
    for part in parts:
        assert part.encode() not in raw, f"{name}: {part[:10]}… reached the bank file"
    texts = [e["text"] + str(e["tool_input"] or "") for e in events_of(bank)]
    assert sum("[REDACTED:" in t for t in texts) >= 6, texts


# Issue 23: metadata is redacted like text. An agent records the repository it worked in, with the token a CI
# checkout put in its remote; that URL reached the bank as is, and from there `export --format jsonl` (a file
# meant to be committed), Hindsight document metadata and `show --json`.
CODEX_SESSION = "019fc73d-ae36-7180-8760-c4e5c923b2ef"
INSTALLATION = "ghs_" + "Qm7" * 12  # a GitHub App installation token, 36 characters after the prefix
HEX40 = "9f8e7d6c5b4a" + "3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c"[:28]
REMOTES = {
    "installation-token": ("https://x-access-token:" + INSTALLATION + "@github.com/octo/app.git", INSTALLATION,
                           "https://github.com/octo/app.git"),
    "url-password": ("https://deploy:" + DB_URL_PASSWORD + "@git.example.com/octo/app", DB_URL_PASSWORD,
                     "https://git.example.com/octo/app"),
    "token-as-user": ("https://" + HEX40 + "@github.com/octo/app", HEX40, "https://github.com/octo/app"),
    "query-token": ("https://git.example.com/octo/app.git?access_token=" + HEX40 + "&ref=main", HEX40,
                    "https://git.example.com/octo/app.git?access_token=[REDACTED:token]&ref=main"),
}


def _codex_rollout(home: Path, remote: str, cwd: str = "/work/app") -> None:
    folder = home / ".codex" / "sessions" / "2026" / "08" / "03"
    folder.mkdir(parents=True)
    meta = {"id": CODEX_SESSION, "timestamp": "2026-08-03T10:48:56.118Z", "cwd": cwd, "originator": "codex_exec",
            "cli_version": "0.171.0", "source": "exec",
            "git": {"commit_hash": "4f1bd2c5a8e9f0b7c6d5e4f3a2b1c0d9e8f7a6b5", "branch": "main",
                    "repository_url": remote}}
    records = [{"type": "session_meta", "payload": meta},
               {"type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5.5-mini"}},
               {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                     "content": [{"type": "input_text", "text": "ship it"}]}}]
    lines = [json.dumps({"timestamp": f"2026-08-03T10:48:{56 + n}.000Z", **r}) for n, r in enumerate(records)]
    (folder / f"rollout-2026-08-03T10-48-56-{CODEX_SESSION}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", REMOTES)
def test_a_remote_with_credentials_never_leaves_in_metadata(tmp_path: Path, name: str) -> None:
    from click.testing import CliRunner

    from harvester.cli import cli
    from harvester.sinks.document import build

    remote, secret, stored = REMOTES[name]
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _codex_rollout(home, remote)
    scan(home, bank, ("codex",))

    raw = b"".join(p.read_bytes() for p in tmp_path.glob("bank.sqlite*"))
    assert secret.encode() not in raw, f"{name}: the remote's credential reached the bank file"
    [session] = sessions_of(bank)
    assert session["origin_url"] == stored

    def cli_out(*args: str) -> str:
        result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)},
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    assert secret not in cli_out("show", CODEX_SESSION, "--json")
    target = tmp_path / "export"
    cli_out("export", "--repo", "/work/app", "--to", str(target), "--format", "jsonl")
    [exported] = list(target.iterdir())
    assert secret not in exported.read_text()
    assert json.loads(exported.read_text().splitlines()[0])["session"]["origin_url"] == stored
    document = build(session, events_of(bank), host="h")
    assert document.metadata["origin"] == stored


def test_every_metadata_field_claude_code_records_is_redacted(tmp_path: Path) -> None:
    """Branch, model, agent version, the type of a record the parser does not know (a problem's detail, shown
    by ``status``) and the parser's own state (the cursor keeps the branch and the cwd): all in the bank file,
    none with the secret."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app", version="2.1.197 " + GITHUB)
    reply = json.loads(s.assistant("done"))
    reply["message"]["model"] = "claude-opus-4 via https://gw:" + DB_URL_PASSWORD + "@llm.internal"
    reply["gitBranch"] = "fix/" + AWS_KEY
    unknown = {**json.loads(s.user("x")), "type": "probe " + JWT}
    s.write(s.user("hello"), json.dumps(reply).encode() + b"\n", json.dumps(unknown).encode() + b"\n")
    scan(home, bank)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("bank.sqlite*"))
    for secret in (GITHUB, AWS_KEY, DB_URL_PASSWORD, JWT):
        assert secret.encode() not in raw, f"{secret[:8]}… reached the bank file"
    [session] = sessions_of(bank)
    assert session["branch"] == "fix/[REDACTED:aws-access-key-id]"
    assert session["redactions"] >= 3


def test_a_bank_from_before_keeps_no_credential_in_its_stored_urls(tmp_path: Path) -> None:
    """Migration 12: the origin URLs a bank stored before issue 23 lose their userinfo when it is opened."""
    import sqlite3

    from harvester.bank import open_bank
    from harvester.bank.migrations import MIGRATIONS

    path = tmp_path / "bank.sqlite"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:9]:
        conn.executescript(script)
    leaked = {"https://x-access-token:" + INSTALLATION + "@github.com/octo/app.git": "https://github.com/octo/app.git",
              "https://deploy:p@ss" + DB_URL_PASSWORD + "@git.example.com/app": "https://git.example.com/app",
              "git@github.com:octo/app.git": "git@github.com:octo/app.git", "https://github.com/a@b": "https://github.com/a@b"}
    for n, url in enumerate(leaked):
        conn.execute("INSERT INTO sessions (harness, native_id, bank_id, origin_url, state, redactions, "
                     "first_imported_at, last_imported_at) VALUES ('codex', ?, 'b', ?, 'ended', 0, 'x', 'x')", (str(n), url))
        conn.execute("INSERT INTO directories (path, project, origin_url, probed_at) VALUES (?, 'app', ?, 'x')",
                     (f"/d{n}", url))
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    with open_bank(path) as bank:
        stored = [r[0] for r in bank.conn.execute("SELECT origin_url FROM sessions ORDER BY native_id")]
        probed = [r[0] for r in bank.conn.execute("SELECT origin_url FROM directories ORDER BY path")]
    assert stored == probed == list(leaked.values())
