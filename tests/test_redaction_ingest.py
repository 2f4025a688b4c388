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
