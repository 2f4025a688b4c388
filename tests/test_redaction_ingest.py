"""Secrets planted in prompts, tool input and tool output never reach the bank file."""

from __future__ import annotations

from pathlib import Path

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
