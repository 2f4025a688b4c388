"""harvester.redact: every rule in the contexts transcripts carry, what must stay, idempotence, values.

Every secret here is fake and generated at run time, and each is built by concatenation ("ghp_" + body)
so that no literal token sits in the repository for a push-protection scanner to flag.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from pathlib import Path

import pytest

from harvester.redact import _PLAN, RULES, redact, redact_value

RNG = random.Random(20240611)
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    # A long generated key has every class of its alphabet (digits, upper, lower); make sure the fakes do.
    classes = [c for c in (str.isdigit, str.isupper, str.islower) if any(c(ch) for ch in alphabet)]
    while True:
        s = "".join(RNG.choices(alphabet, k=n))
        if n < 12 or all(any(c(ch) for ch in s) for c in classes):
            return s


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def pem(label: str, nbytes: int = 900, sep: str = "\n") -> str:
    body = base64.b64encode(RNG.randbytes(nbytes)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return sep.join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


# --- the fakes -------------------------------------------------------------------------------------------

AWS_KEY_ID = "AKIA" + rand(string.ascii_uppercase + "234567", 16)
AWS_STS_KEY_ID = "ASIA" + rand(string.ascii_uppercase + "234567", 16)
AWS_SECRET = rand(ALNUM + "/+", 40)
AWS_SECRET_SLASHED = "/" + rand(ALNUM, 13) + "/" + rand(ALNUM, 8) + "/" + rand(ALNUM, 16)  # reads as a path
GOOGLE_API_KEY = "AIza" + rand(B64URL, 35)
GITHUB_TOKENS = [p + rand(ALNUM, 36) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")] + [
    "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59)
]
GITLAB_TOKENS = [
    p + rand(B64URL, 20) for p in ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "gloas-")
]
HEX = "0123456789abcdef"


def digits(n: int) -> str:
    return str(RNG.randrange(10 ** (n - 1), 10**n))


SLACK_TOKENS = [
    "xoxb-" + digits(12) + "-" + digits(13) + "-" + rand(ALNUM, 24),
    "xoxp-" + digits(12) + "-" + digits(12) + "-" + digits(12) + "-" + rand(HEX, 32),
    "xoxa-2-" + digits(12) + "-" + rand(ALNUM, 40),
    "xoxs-" + digits(10) + "-" + rand(ALNUM, 30),
    "xapp-1-A" + rand(string.ascii_uppercase + string.digits, 10) + "-" + digits(13) + "-" + rand(HEX, 64),
]
SLACK_WEBHOOK_PATH = (
    "T"
    + rand(string.ascii_uppercase + "0123456789", 8)
    + "/B"
    + rand(string.ascii_uppercase + "0123456789", 10)
    + "/"
    + rand(ALNUM, 24)
)
SLACK_WEBHOOK = "https://hooks.slack.com/services/" + SLACK_WEBHOOK_PATH
STRIPE_KEYS = [
    "sk_live_" + rand(ALNUM, 24),
    "rk_live_" + rand(ALNUM, 24),
    "sk_test_" + rand(ALNUM, 24),
    "sk_live_" + rand(ALNUM, 99),
]
STRIPE_PUBLISHABLE = "pk_live_" + rand(ALNUM, 24)
OPENAI_KEYS = [
    "sk-" + rand(ALNUM, 48),
    "sk-proj-" + rand(B64URL, 156),
    "sk-svcacct-" + rand(B64URL, 120),
    "sk-admin-" + rand(B64URL, 80),
]
ANTHROPIC_KEYS = ["sk-ant-api03-" + rand(B64URL, 93) + "AA", "sk-ant-admin01-" + rand(B64URL, 93) + "AA"]
JWT = ".".join(
    [
        b64url(b'{"alg":"HS256","typ":"JWT"}'),
        b64url(json.dumps({"sub": "1234567890", "name": "Dev", "iat": 1716239022}).encode()),
        rand(B64URL, 43),
    ]
)
PASSWORD = "Tr0ub4dor-" + rand(ALNUM, 8)
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
BASE64 = ALNUM + "+/"


def b64(nbytes: int) -> str:
    return base64.b64encode(RNG.randbytes(nbytes)).decode()


# Provider formats added for issue 9; each is built at run time from its prefix and a random body.
PROVIDER_FORMATS: list[tuple[str, str]] = [
    ("sk-or-v1-" + rand(HEX, 64), "openrouter-api-key"),
    ("gsk_" + rand(ALNUM, 52), "groq-api-key"),
    ("xai-" + rand(ALNUM, 80), "xai-api-key"),
    ("pplx-" + rand(ALNUM, 48), "perplexity-api-key"),
    ("r8_" + rand(ALNUM, 37), "replicate-api-token"),
    ("hf_" + rand(ALNUM, 34), "huggingface-token"),
    ("api_org_" + rand(ALNUM, 34), "huggingface-token"),
    ("lsv2_pt_" + rand(HEX, 32) + "_" + rand(HEX, 10), "langsmith-api-key"),
    ("pcsk_" + rand(ALNUM, 6) + "_" + rand(ALNUM, 63), "pinecone-api-key"),
    ("tgp_v1_" + rand(B64URL, 43), "together-api-key"),
    ("ABIA" + rand(string.ascii_uppercase + "234567", 16), "aws-access-key-id"),
    ("ABSK" + rand(BASE64, 132), "aws-bedrock-api-key"),
    ("AQ.Ab8RN6" + rand(B64URL, 44), "google-api-key"),
    (rand(ALNUM, 3) + "8Q~" + rand(ALNUM + "_~.-", 34), "azure-ad-client-secret"),
    ("LTAI" + rand(ALNUM, 20), "alibaba-access-key-id"),
    ("dop_v1_" + rand(HEX, 64), "digitalocean-token"),
    ("doo_v1_" + rand(HEX, 64), "digitalocean-token"),
    ("HRKU-AA" + rand(B64URL, 58), "heroku-api-key"),
    ("fm2_" + rand(BASE64, 140), "flyio-token"),
    ("sbp_" + rand(HEX, 40), "supabase-token"),
    ("dapi" + rand(HEX, 32), "databricks-token"),
    ("napi_" + rand(ALNUM, 64), "neon-api-key"),
    ("rnd_" + rand(ALNUM, 28), "render-api-key"),
    ("tskey-api-" + rand(ALNUM, 11) + "CNTRL-" + rand(ALNUM, 32), "tailscale-key"),
    ("dckr_pat_" + rand(B64URL, 27), "docker-hub-token"),
    ("sha256~" + rand(B64URL, 43), "openshift-token"),
    ("GR1348941" + rand(B64URL, 20), "gitlab-token"),
    ("glpat-" + rand(B64URL, 27) + "." + rand(LOWER_DIGITS, 2) + "." + rand(LOWER_DIGITS, 9), "gitlab-token"),
    ("npm_" + rand(ALNUM, 36), "npm-token"),
    ("pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 70), "pypi-token"),
    ("rubygems_" + rand(HEX, 48), "rubygems-token"),
    ("CLOJARS_" + rand(ALNUM, 60), "clojars-token"),
    ("AKCp" + rand(ALNUM, 69), "artifactory-api-key"),
    ("ATATT3" + rand(ALNUM + "_-", 186), "atlassian-api-token"),
    ("lin_api_" + rand(ALNUM, 40), "linear-api-key"),
    ("PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34), "postman-api-key"),
    ("sntryu_" + rand(HEX, 64), "sentry-token"),
    ("sntrys_eyJ" + rand(BASE64, 120) + "_" + rand(BASE64, 43), "sentry-token"),
    ("glc_" + rand(BASE64, 80), "grafana-token"),
    ("glsa_" + rand(ALNUM, 32) + "_" + rand(HEX, 8), "grafana-token"),
    ("NRAK-" + rand(UPPER_DIGITS, 27), "newrelic-key"),
    ("sgp_" + rand(HEX, 16) + "_" + rand(HEX, 40), "sourcegraph-token"),
    ("rdme_" + rand(LOWER_DIGITS, 70), "readme-api-key"),
    ("pnu_" + rand(ALNUM, 36), "prefect-api-key"),
    ("tk-us-" + rand(B64URL, 48), "scalingo-token"),
    ("API-" + rand(UPPER_DIGITS, 26), "octopus-deploy-api-key"),
    ("figd_" + rand(B64URL, 40), "figma-token"),
    ("ntn_" + digits(11) + rand(ALNUM, 35), "notion-token"),
    ("EZAK" + rand(ALNUM, 54), "easypost-api-key"),
    ("ops_eyJ" + rand(BASE64, 260), "onepassword-token"),
    ("A3-" + "-".join(rand(UPPER_DIGITS, n) for n in (6, 11, 5, 5, 5)), "onepassword-secret-key"),
    ("shippo_live_" + rand(HEX, 40), "shippo-token"),
    ("sm_pat_" + rand(ALNUM, 16), "settlemint-token"),
    ("AGE-SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "age-secret-key"),
    (digits(10) + ":AA" + rand(B64URL, 33), "telegram-bot-token"),
    ("SG." + rand(B64URL, 22) + "." + rand(B64URL, 43), "sendgrid-api-key"),
    ("xkeysib-" + rand(HEX, 64) + "-" + rand(ALNUM, 16), "brevo-api-key"),
    ("key-" + rand(HEX, 32), "mailgun-api-key"),
    ("AC" + rand(HEX, 32), "twilio-account-sid"),
    ("SK" + rand(HEX, 32), "twilio-api-key"),
    ("EAAA" + rand(B64URL, 60), "square-token"),
    ("EAAB" + rand(ALNUM, 120), "facebook-access-token"),
    ("shpat_" + rand(HEX, 32), "shopify-token"),
    ("shpss_" + rand(HEX, 32), "shopify-token"),
    ("xoxc-" + digits(12) + "-" + digits(12) + "-" + digits(12) + "-" + rand(HEX, 64), "slack-token"),
]

# One secret of every token format, with its kind.
FORMATS: list[tuple[str, str]] = [
    (AWS_KEY_ID, "aws-access-key-id"),
    (AWS_STS_KEY_ID, "aws-access-key-id"),
    (GOOGLE_API_KEY, "google-api-key"),
    *((t, "github-token") for t in GITHUB_TOKENS),
    *((t, "gitlab-token") for t in GITLAB_TOKENS),
    *((t, "slack-token") for t in SLACK_TOKENS),
    *((t, "stripe-key") for t in STRIPE_KEYS),
    *((t, "openai-api-key") for t in OPENAI_KEYS),
    *((t, "anthropic-api-key") for t in ANTHROPIC_KEYS),
    (JWT, "jwt"),
    *PROVIDER_FORMATS,
]

# The places a secret turns up in a transcript; none of them names a secret in a key, so only the
# format can give the secret away.
CONTEXTS: dict[str, str] = {
    "prose": "Sure — I found the credential in the old notes: {s}. I’ll rotate it after the deploy.",
    "env": "# .env.production\nAPP_ENV=production\nUPSTREAM_CREDENTIAL={s}\nLOG_LEVEL=info\n",
    "json": '{{"type": "tool_result", "content": {{"id": 42, "value": "{s}", "ok": true}}}}',
    "shell": "$ ./scripts/deploy.sh --env prod\n[deploy] using credential {s}\n[deploy] done in 3.2s\n",
    "curl": "$ curl -sS -X POST https://api.example.com/v1/jobs -H 'X-Credential: {s}' -d @job.json\n",
    "yaml": "service:\n  name: web\n  upstream:\n    credential: {s}\n    timeout: 30\n",
    "python": 'client = make_client("{s}")  # TODO: read it from the keyring\n',
}


def assert_redacted(text: str, secret: str, kind: str, n: int = 1) -> str:
    out, counts = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts == {kind: n}, counts
    return out


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize(("secret", "kind"), FORMATS, ids=[f"{k}-{s[:7]}" for s, k in FORMATS])
def test_token_formats_in_every_context(secret: str, kind: str, context: str) -> None:
    text = CONTEXTS[context].format(s=secret)
    out = assert_redacted(text, secret, kind)
    assert out == text.replace(secret, f"[REDACTED:{kind}]")


def test_non_ascii_around_a_secret_keeps_positions() -> None:
    text = f"Schlüssel → {GITHUB_TOKENS[0]} ✓ 完成\nDB_PASSWORD={PASSWORD} — fertig"
    out, counts = redact(text)
    assert out == "Schlüssel → [REDACTED:github-token] ✓ 完成\nDB_PASSWORD=[REDACTED:password] — fertig"
    assert counts == {"github-token": 1, "password": 1}


def test_latin1_and_wider_characters_inside_values() -> None:
    # Latin-1 characters are bytes of their own in the scan, wider ones stand in as "?": both belong
    # to the value like any letter.
    out, counts = redact("DB_PASSWORD=pässwörd-Ünïcode9 # set by ops\nx=1")
    assert out == "DB_PASSWORD=[REDACTED:password] # set by ops\nx=1" and counts == {"password": 1}
    out, counts = redact('{"password": "пароль→секрет"}')
    assert out == '{"password": "[REDACTED:password]"}' and counts == {"password": 1}
    out, counts = redact("amqp://worker:mötley-crüe-42@rabbit:5672/")
    assert out == "amqp://worker:[REDACTED:url-password]@rabbit:5672/" and counts == {"url-password": 1}


# --- issue 9: provider formats that carry a name, pairs, splits, look-alikes ---------------------------------

AZURE_KEY = b64(64)  # 88 characters ending in ==


@pytest.mark.parametrize(
    "template",
    [
        "DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey={k};EndpointSuffix=core.windows.net",
        '{{"connectionString": "DefaultEndpointsProtocol=https;AccountName=a1;AccountKey={k}"}}',
        "export AZURE_STORAGE_CONNECTION_STRING='AccountName=a1;AccountKey={k}'\n",
    ],
)
def test_azure_storage_account_key_keeps_the_names(template: str) -> None:
    text = template.format(k=AZURE_KEY)
    out = assert_redacted(text, AZURE_KEY, "azure-storage-key")
    assert out == text.replace(AZURE_KEY, "[REDACTED:azure-storage-key]")


def test_azure_service_bus_key_and_sas_signature() -> None:
    key = b64(32)
    text = ("Endpoint=sb://ns1.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={key}")
    assert redact(text)[0] == text.replace(key, "[REDACTED:azure-shared-access-key]")
    sig = b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    url = (f"https://acct.blob.core.windows.net/c/f.txt?sp=r&st=2024-05-01T00:00:00Z&se=2024-05-02T00:00:00Z"
           f"&spr=https&sv=2022-11-02&sr=b&sig={sig}")
    out, counts = redact(f"curl -o f.txt '{url}'")
    assert sig not in out and counts == {"azure-sas-signature": 1}
    assert "sv=2022-11-02&sr=b&sig=[REDACTED:azure-sas-signature]'" in out
    # sig= without a SAS version is not taken for one; it is still a signed URL's credential (issue 23)
    assert redact("see https://example.com/verify?sig=" + rand(ALNUM, 40))[1] == {"token": 1}


TWILIO_SID = "AC" + rand(HEX, 32)
TWILIO_TOKEN = rand(HEX, 32)


@pytest.mark.parametrize(
    "template",
    [
        "client = Client('{sid}', '{tok}')\n",
        "$ curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json -u {sid}:{tok}\n",
        "TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={tok}\n",
        '{{"account_sid": "{sid}", "auth_token": "{tok}", "friendly_name": "prod"}}',
        "The account is {sid} and its auth token {tok}; rotate it.",
    ],
)
def test_twilio_sid_and_its_auth_token_both_go(template: str) -> None:
    text = template.format(sid=TWILIO_SID, tok=TWILIO_TOKEN)
    out, counts = redact(text)
    assert TWILIO_SID not in out and TWILIO_TOKEN not in out, out
    assert counts.get("twilio-account-sid", 0) >= 1
    assert redact(out) == (out, {})


def test_teams_and_slack_webhooks_keep_the_host() -> None:
    path = f"{RNG.randbytes(16).hex()}@{RNG.randbytes(16).hex()}/IncomingWebhook/{rand(HEX, 32)}/{rand(HEX, 32)}"
    text = f"curl -d @card.json https://contoso.webhook.office.com/webhookb2/{path}"
    out = assert_redacted(text, path, "teams-webhook")
    assert out.endswith("contoso.webhook.office.com/webhookb2/[REDACTED:teams-webhook]")


SPLIT_SECRETS = [
    (AWS_KEY_ID, "aws-access-key-id", 4),
    (GITHUB_TOKENS[0], "github-token", 4),
    (GITHUB_TOKENS[-1], "github-token", 11),
    (STRIPE_KEYS[0], "stripe-key", 8),
    (GOOGLE_API_KEY, "google-api-key", 4),
    (JWT, "jwt", 3),
]


@pytest.mark.parametrize("brk", ["\\n", "\\r\\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize(("secret", "kind", "prefix"), SPLIT_SECRETS, ids=[f"{k}-{s[:5]}" for s, k, _ in SPLIT_SECRETS])
def test_token_split_by_an_escaped_line_break(secret: str, kind: str, prefix: int, brk: str) -> None:
    # JSON tool output of a terminal that wrapped the line: neither half may survive, wherever the cut.
    # A tail too short to tell from the next line (3 letters, no digit) is not joined: see splits.py.
    for cut in sorted({prefix + 1, (prefix + len(secret)) // 2, len(secret) - 10}):
        head, tail = secret[:cut], secret[cut:]
        text = '{"stdout": "wrapped:\\n' + head + brk + tail + '\\ndone", "code": 0}'
        out, counts = redact(text)
        assert head not in out and tail not in out, (cut, out)
        assert counts == {kind: 1}, (cut, counts)
        assert out == text.replace(head + brk + tail, f"[REDACTED:{kind}]")


@pytest.mark.parametrize(
    "url",
    [
        "postgres://app:S3cr3t\\n-p4ss@db.internal:5432/app",
        "postgres:/\\n/app:S3cr3t-p4ss@db.internal:5432/app",
        "postgres:\\r\\n//app:S3cr3t-p4ss@db.internal:5432/app",
        "postgresql://ap\\np:S3cr3t-p4ss@db.internal:5432/app",
    ],
)
def test_url_password_split_by_an_escaped_line_break(url: str) -> None:
    out, counts = redact('{"stdout": "DATABASE_URL=' + url + '"}')
    assert "S3cr3t" not in out and "p4ss" not in out and counts == {"url-password": 1}, out


def test_a_line_after_a_key_is_not_taken_for_its_rest() -> None:
    key = STRIPE_KEYS[0]
    text = '{"stdout": "STRIPE=' + key + '\\nDone\\nHTTP/1.1 200 OK"}'
    assert redact(text)[0] == text.replace(key, "[REDACTED:stripe-key]")


@pytest.mark.parametrize(("secret", "kind"), [(AWS_KEY_ID, "aws-access-key-id"), (GITHUB_TOKENS[0], "github-token"),
                                              (GOOGLE_API_KEY, "google-api-key"), (PROVIDER_FORMATS[5][0], "huggingface-token")])
@pytest.mark.parametrize("before", ["\\n", "\\t", "\\r\\n", "\x1b[1;32m", "\\u001b[0m", "\x1b[38;5;208m"])
def test_token_right_after_an_escape_or_a_colour_code(secret: str, kind: str, before: str) -> None:
    # "...\nAKIA..." in JSON output: the "n" of the escape is not part of the key; nor is the "m" that
    # ends a terminal colour.
    text = '{"stdout": "key:' + before + secret + '\\n"}'
    assert redact(text) == (text.replace(secret, f"[REDACTED:{kind}]"), {kind: 1})


def test_documented_example_keys_stay_redacted() -> None:
    # AWS's documentation key is still redacted: a safe default costs nothing, a real key that looks like
    # it would leak.
    text = "aws configure set aws_access_key_id " + "AKIA" + "IOSFODNN7" + "EXAMPLE"
    assert redact(text) == ("aws configure set aws_access_key_id [REDACTED:aws-access-key-id]",
                            {"aws-access-key-id": 1})


LOOK_ALIKES = [
    "commit " + rand(HEX, 40) + "\nMerge: " + rand(HEX, 7) + " " + rand(HEX, 7),
    "request_id=" + "-".join(rand(HEX, n) for n in (8, 4, 4, 4, 12)),
    "  ".join([rand(HEX, 64), "app.tar.gz"]),
    rand(HEX, 128) + "  app.tar.gz",
    "sha256:" + rand(HEX, 64),
    '"integrity": "sha512-' + b64(64) + '"',
    '"integrity": "sha1-' + b64(20) + '"',
    '<img alt="logo" src="data:image/png;base64,' + b64(1500) + '">',
    b64(3000),
    "\n".join(b64(3000)[i : i + 76] for i in range(0, 3000, 76)),
    '<div class="flex items-center justify-between px-4 py-2 bg-blue-500 hover:bg-blue-700 sm:px-6 lg:px-8">',
    "password_reset_url = reverse('password_reset_confirm', args=[uid, token_generator])",
    "def test_api_key_rotation_keeps_the_old_key_for_an_hour(): ...",
    "from huggingface_hub import hf_hub_download, snapshot_download",
    "npm_config_registry=https://registry.npmjs.org/ npm_config_cache=/tmp/.npm",
    "ACTION_REQUIRED ACCEPTED ACCOUNT_DISABLED AGE_LIMIT_EXCEEDED",
    "skeleton-loader skip-link sk-learn task-runner disk-usage",
    "glob_pattern glance_view gsk_spec.md",
    "x-amz-key: abc123 key-value-store key-" + "9" * 8,
    "the SKU of item SK-1024 is on page 12",
    "https://docs.python.org/3/library/re.html#re.Pattern.fullmatch",
    "~/.config/gcloud/application_default_credentials.json and ~/.ssh/id_ed25519.pub",
    "dapi-version: 2 and rapid_api_gateway",
]


@pytest.mark.parametrize("text", LOOK_ALIKES, ids=[t[:30] for t in LOOK_ALIKES])
def test_look_alikes_stay(text: str) -> None:
    out, counts = redact(text)
    assert counts == {} and out is text, out


# --- private keys ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "DSA PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_pem_block_is_redacted_whole(label: str) -> None:
    key = pem(label)
    text = f"$ cat ~/.ssh/id_test\n{key}\n$ ls\n"
    out = assert_redacted(text, key.splitlines()[5], "private-key")
    assert out == "$ cat ~/.ssh/id_test\n[REDACTED:private-key]\n$ ls\n"


def test_gcp_service_account_json() -> None:
    key = pem("PRIVATE KEY", sep="\\n") + "\\n"
    body_line = key.split("\\n")[3]
    doc = json.dumps(
        {
            "type": "service_account",
            "project_id": "demo-123",
            "private_key_id": rand(HEX, 40),
            "client_email": "ci@demo-123.iam.gserviceaccount.com",
        }
    )
    text = doc[:-1] + ', "private_key": "' + key + '"}'
    out = assert_redacted(text, body_line, "private-key")
    assert '"private_key": "[REDACTED:private-key]\\n"' in out
    assert "ci@demo-123.iam.gserviceaccount.com" in out


def test_pem_inside_yaml_block_and_python_string() -> None:
    key = pem("EC PRIVATE KEY", 120)
    yaml = "tls:\n  key: |\n" + "".join(f"    {line}\n" for line in key.splitlines())
    assert_redacted(yaml, key.splitlines()[1], "private-key")
    py = 'KEY = "' + key.replace("\n", "\\n") + '"\n'
    assert_redacted(py, key.splitlines()[1], "private-key")


def test_truncated_pem_is_redacted_as_far_as_it_goes() -> None:
    key = pem("RSA PRIVATE KEY")
    cut = "\n".join(key.splitlines()[:8])
    out = assert_redacted(f"$ head -8 id_rsa\n{cut}", key.splitlines()[7], "private-key")
    assert out == "$ head -8 id_rsa\n[REDACTED:private-key]"


def test_public_keys_and_certificates_stay() -> None:
    text = pem("PUBLIC KEY") + "\n" + pem("CERTIFICATE") + "\n"
    assert redact(text)[0] is text
    code = 'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    kind = "rsa"\n'
    assert redact(code)[0] is code
    docs = "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"
    assert redact(docs)[0] is docs


# --- URLs, headers, webhooks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "DATABASE_URL=postgres://app:{p}@db.internal:5432/app\n",
        '{{"broker": "amqp://worker:{p}@rabbit:5672/%2f", "retries": 3}}',
        "$ git clone https://deploy:{p}@git.example.com/octo/app.git\nCloning into 'app'...\n",
        'engine = create_engine("postgresql+psycopg://app:{p}@localhost/app")\n',
        "cache:\n  url: redis://:{p}@cache:6379/0\n",
        "Connect with mongodb+srv://admin:{p}@cluster0.example.net/?retryWrites=true, then run the seed.",
    ],
)
def test_url_password_keeps_scheme_user_host(template: str) -> None:
    text = template.format(p=PASSWORD)
    out = assert_redacted(text, PASSWORD, "url-password")
    assert out == text.replace(PASSWORD, "[REDACTED:url-password]")


@pytest.mark.parametrize("context", CONTEXTS)
def test_slack_webhook_keeps_host(context: str) -> None:
    text = CONTEXTS[context].format(s=SLACK_WEBHOOK)
    out = assert_redacted(text, SLACK_WEBHOOK_PATH, "slack-webhook")
    assert out == text.replace(SLACK_WEBHOOK_PATH, "[REDACTED:slack-webhook]")


BEARER = rand(B64URL + ".~", 40)
BASIC = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()


@pytest.mark.parametrize(
    ("template", "scheme"),
    [
        ('$ curl -H "Authorization: Bearer {b}" https://api.example.com/v1/me\n', "Bearer"),
        (
            "GET /v1/me HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer {b}\r\nAccept: */*\r\n",
            "Bearer",
        ),
        ('{{"headers": {{"Authorization": "Bearer {b}", "Accept": "application/json"}}}}', "Bearer"),
        ("resp = requests.get(url, headers={{'Authorization': 'Bearer {b}'}})\n", "Bearer"),
        ("    authorization: Bearer {b}\n", "Bearer"),
        ("curl -H 'Proxy-Authorization: Basic {c}' http://proxy:3128\n", "Basic"),
        ("Authorization: token {b}\n", "token"),
    ],
)
def test_authorization_header_keeps_scheme(template: str, scheme: str) -> None:
    secret = BASIC if "{c}" in template else BEARER
    text = template.format(b=BEARER, c=BASIC)
    out = assert_redacted(text, secret, "authorization")
    assert f"{scheme} [REDACTED:authorization]" in out


def test_jwt_in_authorization_header_is_a_jwt() -> None:
    out, counts = redact(f"Authorization: Bearer {JWT}")
    assert out == "Authorization: Bearer [REDACTED:jwt]" and counts == {"jwt": 1}


def test_token_in_url_is_the_token_kind() -> None:
    out, counts = redact(f"git clone https://x-access-token:{GITHUB_TOKENS[3]}@github.com/octo/app.git")
    assert out == "git clone https://x-access-token:[REDACTED:github-token]@github.com/octo/app.git"
    assert counts == {"github-token": 1}


# --- key = value -------------------------------------------------------------------------------------------

HEX64 = rand("0123456789abcdef", 64)
OPAQUE = rand(ALNUM, 32)

ASSIGNMENTS: list[tuple[str, str, str]] = [
    # .env / shell
    (f"DB_PASSWORD={PASSWORD}\n", PASSWORD, "password"),
    ("export PGPASSWORD=hunter\n", "hunter", "password"),
    (f"export GITHUB_TOKEN={OPAQUE}\n", OPAQUE, "token"),
    (f'API_KEY="{OPAQUE}"\n', OPAQUE, "api-key"),
    (f"CLIENT_SECRET={OPAQUE}\n", OPAQUE, "secret"),
    (f"SECRET_KEY='django-insecure-{OPAQUE}'\n", OPAQUE, "secret"),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", AWS_SECRET, "aws-secret-access-key"),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET_SLASHED}\n", AWS_SECRET_SLASHED, "aws-secret-access-key"),
    (f"PRIVATE_KEY=0x{HEX64}\n", HEX64, "private-key"),
    ("db_password=hunter\n", "hunter", "password"),
    ("docker run -e POSTGRES_PASSWORD=hunter -p 5432:5432 postgres:16\n", "hunter", "password"),
    # credentials file / INI
    (
        f"[default]\nregion = eu-west-1\naws_secret_access_key = {AWS_SECRET}\n",
        AWS_SECRET,
        "aws-secret-access-key",
    ),
    (f"[pypi]\nusername = __token__\npassword = pypi-{OPAQUE}\n", OPAQUE, "password"),
    # JSON
    (f'{{"username": "dev", "password": "{PASSWORD}"}}', PASSWORD, "password"),
    (f'{{"access_token":"ya29.{OPAQUE}","token_type":"Bearer","expires_in":3599}}', OPAQUE, "token"),
    (
        f'{{"Credentials": {{"SecretAccessKey": "{AWS_SECRET}", "Expiration": "2024-10-10T12:00:00Z"}}}}',
        AWS_SECRET,
        "aws-secret-access-key",
    ),
    (
        f'{{"installed": {{"client_id": "1234.apps.example.com", "client_secret": "GOCSPX-{OPAQUE}"}}}}',
        OPAQUE,
        "secret",
    ),
    (f'{{"apiKey": "{OPAQUE}"}}', OPAQUE, "api-key"),
    ('{"password": "correct horse battery staple"}', "correct horse battery staple", "password"),
    (f'log: payload={{\\"password\\": \\"{PASSWORD}\\"}}', PASSWORD, "password"),
    # YAML
    ("db:\n  user: app\n  password: hunter\n", "hunter", "password"),
    (f"  - client_secret: '{OPAQUE}'\n", OPAQUE, "secret"),
    (f"openai:\n  api_key: {OPAQUE}\n", OPAQUE, "api-key"),
    (f"webhook_secret: {OPAQUE}\n", OPAQUE, "secret"),
    # CLI flags
    (f"$ mysql -u root --password={PASSWORD} app\n", PASSWORD, "password"),
    ("$ docker login --username dev --password hunter registry.example.com\n", "hunter", "password"),
    (f"$ tool --api-key {OPAQUE} --verbose\n", OPAQUE, "api-key"),
    (f"$ gh-cli auth --client-secret={OPAQUE}\n", OPAQUE, "secret"),
    (f"$ vault login --token {OPAQUE}\n", OPAQUE, "token"),
    (
        f"$ curl -s https://oauth.example.com/token -d 'grant_type=client_credentials&client_secret={OPAQUE}'\n",
        OPAQUE,
        "secret",
    ),
    # URL query, connection string
    (f"GET /callback?code=abc&access_token={OPAQUE}&state=xyz HTTP/1.1\n", OPAQUE, "token"),
    (f"Server=db;Database=app;User Id=sa;Password={PASSWORD};\n", PASSWORD, "password"),
    ("spring.datasource.password=hunter\n", "hunter", "password"),
    # source code: quoted literals
    (f'password = "{PASSWORD}"\n', PASSWORD, "password"),
    (f"client = Client(api_key='{OPAQUE}', timeout=30)\n", OPAQUE, "api-key"),
    (f'token := "{OPAQUE}"\n', OPAQUE, "token"),
    (f"    'password' => '{PASSWORD}',\n", PASSWORD, "password"),
    (f'    password: str = "{PASSWORD}"\n', PASSWORD, "password"),
    (f'const apiKey: string = "{OPAQUE}";\n', OPAQUE, "api-key"),
    (f"settings.SECRET_KEY = '{OPAQUE}'\n", OPAQUE, "secret"),
    (f"conn = connect(host, password={PASSWORD})\n", PASSWORD, "password"),  # letters and digits
    # prose
    (f"The staging password: {PASSWORD} (rotate after the demo).", PASSWORD, "password"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), ASSIGNMENTS, ids=[t[:40] for t, _, _ in ASSIGNMENTS])
def test_assignment_keeps_key_replaces_value(text: str, secret: str, kind: str) -> None:
    out = assert_redacted(text, secret, kind)
    before = out[: out.index("[REDACTED:")]
    assert text.startswith(before)  # the key and all before it stay; the value starts the marker
    assert text[len(before) :].endswith(out[out.index("]", len(before)) + 1 :])  # so does all after it


def test_assignment_exact_output() -> None:
    text = f"password={PASSWORD}\nuser=dev\n"
    assert redact(text) == ("password=[REDACTED:password]\nuser=dev\n", {"password": 1})
    text = f'"api_key": "{OPAQUE}", "timeout": 30'
    assert redact(text) == ('"api_key": "[REDACTED:api-key]", "timeout": 30', {"api-key": 1})


def test_counts_per_kind_in_one_text() -> None:
    text = (
        f"DB_PASSWORD={PASSWORD}\nREDIS_PASSWORD=x{PASSWORD}\nGITHUB_TOKEN={GITHUB_TOKENS[0]}\n"
        f"API_KEY={OPAQUE}\nHOME=/home/dev\n"
    )
    out, counts = redact(text)
    assert counts == {"password": 2, "github-token": 1, "api-key": 1}
    assert out.endswith("HOME=/home/dev\n")


# --- what must stay ----------------------------------------------------------------------------------------

UNTOUCHED = [
    # empty values and placeholders
    "password=\n",
    "PASSWORD=\nUSER=dev\n",
    'password: ""',
    "token=${TOKEN}",
    "TOKEN=$GITHUB_TOKEN",
    'export TOKEN="${GITHUB_TOKEN:-}"',
    'password: "<your password>"',
    "api_key: YOUR_API_KEY",
    "password: xxxxxxxx",
    "password: ********",
    "password: changeme",
    "secret: {{ .Values.secret }}",
    "password=%s",
    "dsn = 'postgres://%s:%s@%s/%s'",
    "password: null",
    '"token": null',
    "token: true",
    "api_key: <redacted>",
    "password: [REDACTED]",
    "token=sk-...abcd",
    "api_key = 'your-api-key-here'",
    # code
    "token = get_token()",
    "password=password",
    "self.password = password",
    "token = self.token",
    "api_key = os.environ['OPENAI_API_KEY']",
    "password = request.form.get('password', '')",
    "def login(user: str, password: str) -> Session:",
    'secret := os.Getenv("CLIENT_SECRET")',
    "const token = await getToken();",
    "if password == confirm:",
    "if (token != null) return;",
    "headers = {'Authorization': f'Bearer {token}'}",
    "headers['Authorization'] = 'Bearer ' + token",
    "token: Token = lexer.next()",
    "for token in tokens:",
    "max_tokens=1024",
    "tokenizer = load(name)",
    '"input_tokens": 1234, "output_tokens": 56',
    '"token_type": "bearer"',
    "return {'access_token': token}",
    "self.api_key = key",
    "connect(host, password=pw)",
    "TOKEN = os.getenv('TOKEN')",
    "{token: tok}",
    'print("Token: " + repr(tok))',
    "def getpass(prompt='Password: ', stream=None):",
    'errors.New("get token: %w")',
    'fmt.Errorf("get token: %w", err)',
    "token::Kind::Ident",
    ': "${GITHUB_TOKEN:?set GITHUB_TOKEN first}"',
    "api_key: Optional[str] = None",
    "password_hash = bcrypt(pw)",
    "secret_name: prod/db",
    "secrets: inherit",
    "kind: Secret",
    '"next_token": "eyJleHBpcmF0aW9uIjogMTcwMDAwMDAwMH0="',
    '"pad_token": "[PAD]"',
    '"eos_token": "</s>"',
    "password_file: /run/secrets/db_password",
    "secret: /run/secrets/app",
    "--password-stdin",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "curl -H 'Authorization: Bearer ${{ secrets.GITHUB_TOKEN }}' https://api.github.com",
    "Authorization: Bearer <token>",
    "authorization = authorization[1].encode('ascii')",
    "# The --username and --password options can't be used for",
    "    Token:              foreground,",
    "    Token:              \"#f8f8f2\", # class:  ''",
    "'id': {'token': 123, 'group': 2}",
    "with self.subTest(f'token {token:02x}'):",
    'USER_PASSWD = "%s:%s" % (U, P)',
    # prose and logs
    "The token expired, so I refreshed it.",
    "Enter your password: ",
    "[sudo] password for dev: ",
    "cat: /etc/passwd: Permission denied",
    "Reset it at https://example.com/reset-password?next=/home",
    "Don't put the password in the config file; read it from the keyring.",
    # URLs, ids and hashes
    "https://github.com/octo/app.git",
    "git@github.com:octo/app.git",
    "ssh://git@github.com:22/octo/app",
    "docker://ubuntu:22.04@sha256:" + rand("0123456789abcdef", 64),
    "https://dev@example.com/repo",
    "postgres://app:${DB_PASSWORD}@db:5432/app",
    "postgres://{user}:{password}@{host}/db",
    "mailto:dev@example.com",
    '"integrity": "sha512-' + base64.b64encode(RNG.randbytes(64)).decode() + '"',
    "commit " + rand("0123456789abcdef", 40),
    "request_id=" + "0b4f2c1e-9d7a-4c1b-8f3e-2a6d5b7c9e01",
    "pip install scikit-learn  # a.k.a. sk-learn",
    "task-" + "1234567890abcdefghijk",
    "/dev/disk/by-uuid/x",
    "ASIA_PACIFIC_REGION",
    "STRIPE_PUBLISHABLE_KEY=" + STRIPE_PUBLISHABLE,
    "sk_test_fixtures_directory",
    "xapp-settings-panel-component",
    "glob-pattern-matching-utility",
    "AIzaHelper",
]


@pytest.mark.parametrize("text", UNTOUCHED, ids=[t[:40] for t in UNTOUCHED])
def test_false_positives_stay_untouched(text: str) -> None:
    out, counts = redact(text)
    assert counts == {}
    assert out is text


def test_clean_text_returns_the_same_object() -> None:
    text = "def add(a: int, b: int) -> int:\n    return a + b\n" * 50
    out, counts = redact(text)
    assert out is text and counts == {}
    assert redact("") == ("", {})


# --- idempotence --------------------------------------------------------------------------------------------


def _medley() -> str:
    parts = [CONTEXTS[c].format(s=s) for s, _ in FORMATS for c in ("env", "json")]
    parts += [t for t, _, _ in ASSIGNMENTS] + [pem("OPENSSH PRIVATE KEY"), f"Authorization: Basic {BASIC}"]
    parts += [f"redis://:{PASSWORD}@cache:6379", f"Authorization: Negotiate {BEARER}", SLACK_WEBHOOK]
    return "\n".join(parts)


def test_idempotent() -> None:
    once, counts = redact(_medley())
    assert sum(counts.values()) > len(FORMATS) * 2
    twice, again = redact(once)
    assert twice == once and again == {}
    assert twice is once


@pytest.mark.parametrize("text", [a[0] for a in ASSIGNMENTS], ids=[a[0][:30] for a in ASSIGNMENTS])
def test_idempotent_per_case(text: str) -> None:
    once = redact(text)[0]
    assert redact(once) == (once, {})


# Pieces of every syntax the rules look at, shuffled: a pass that redacts must leave nothing for the next.
FUZZ_PIECES = [
    "token",
    "password",
    "passwd",
    "secret",
    "api_key",
    "apiKey",
    "private_key",
    "authorization",
    "Authorization: ",
    "Bearer ",
    "basic ",
    ":",
    "=",
    " = ",
    ": ",
    "=>",
    ":=",
    "==",
    "'",
    '"',
    '\\"',
    "`",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    "$",
    "${",
    "%s",
    "-",
    "--",
    "_",
    ".",
    "/",
    "://",
    "@",
    "?",
    "&",
    ";",
    ",",
    " ",
    "\t",
    "\n",
    "a",
    "Z",
    "9",
    "abc123",
    "sk-",
    "ghp_",
    "glpat-",
    "xoxb-",
    "AKIA",
    "AIza",
    "eyJ",
    "-----BEGIN ",
    "PRIVATE KEY-----",
    "-----END ",
    "sk_live_",
    "hooks.slack.com/services/",
    "hf_",
    "npm_",
    "AccountKey=",
    "AC" + "0123456789abcdef" * 2,
    "dapi",
    "SG.",
    "\\n",
    "\\r\\n",
    "\x1b[1m",
    "A1b2C3d4E5f6G7h8I9j0",
    "str",
    "| None",
    "é",
    "→",
    "#",
]


@pytest.mark.parametrize("seed", range(4))
def test_idempotent_on_shuffled_syntax(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        weights = [rng.random() ** 3 for _ in FUZZ_PIECES]
        text = "".join(rng.choices(FUZZ_PIECES, weights, k=rng.choice((80, 600))))
        once, _ = redact(text)
        assert redact(once) == (once, {}), text


# --- JSON-like values --------------------------------------------------------------------------------------


def test_redact_value_nested() -> None:
    tokens_list = ["a", "b"]
    untouched = {"cmd": "ls -la", "n": 3}
    value = {
        "tool_input": {
            "command": f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com",
            "env": {"DB_PASSWORD": "hunter", "HOME": "/home/dev", "GITHUB_TOKEN": GITHUB_TOKENS[0]},
        },
        "headers": [{"name": "Authorization", "value": f"Basic {BASIC}"}, {"name": "Accept", "value": "*/*"}],
        "config": {
            "api_key": "abc",
            "password": "",
            "token": None,
            "tokens": tokens_list,
            "timeout": 30,
            "Authorization": f"Bearer {BEARER}",
            "client_secret": ["s1-abc", "s2-def"],
        },
        "untouched": untouched,
        "k8s": [{"name": "POSTGRES_PASSWORD", "value": "hunter"}, {"name": "PGDATA", "value": "/var/lib/pg"}],
    }
    snapshot = json.dumps(value)
    out, counts = redact_value(value)
    assert json.dumps(value) == snapshot  # the input is not modified
    assert (
        out["tool_input"]["command"]
        == "curl -H 'Authorization: Bearer [REDACTED:authorization]' https://api.example.com"
    )
    assert out["tool_input"]["env"] == {
        "DB_PASSWORD": "[REDACTED:password]",
        "HOME": "/home/dev",
        "GITHUB_TOKEN": "[REDACTED:github-token]",
    }
    assert out["headers"][0] == {"name": "Authorization", "value": "Basic [REDACTED:authorization]"}
    assert out["headers"][1] is value["headers"][1]
    assert out["config"]["api_key"] == "[REDACTED:api-key]"
    assert out["config"]["password"] == "" and out["config"]["token"] is None
    assert out["config"]["timeout"] == 30
    assert out["config"]["tokens"] is tokens_list
    assert out["config"]["Authorization"] == "Bearer [REDACTED:authorization]"
    assert out["config"]["client_secret"] == ["[REDACTED:secret]", "[REDACTED:secret]"]
    assert out["untouched"] is untouched
    assert out["k8s"] == [{"name": "POSTGRES_PASSWORD", "value": "[REDACTED:password]"}, value["k8s"][1]]
    assert counts == {"authorization": 3, "password": 2, "github-token": 1, "api-key": 1, "secret": 2}


def test_redact_value_unchanged_is_the_same_object() -> None:
    value = {
        "a": [1, 2.5, None, True, "plain text", {"b": "more text", "tokens": 12}],
        "password": "changeme",
    }
    out, counts = redact_value(value)
    assert out is value and counts == {}
    for scalar in ("just text", 42, None, 1.5):
        assert redact_value(scalar) == (scalar, {}) and redact_value(scalar)[0] is scalar


def test_redact_value_strings_and_tuples() -> None:
    assert redact_value(f"token={OPAQUE}") == ("token=[REDACTED:token]", {"token": 1})
    assert redact_value(("x", JWT)) == (("x", "[REDACTED:jwt]"), {"jwt": 1})


def test_redact_value_odd_keys() -> None:
    value = {"\udc80password": "hunter2", 3: "x", ("a", "b"): "y"}
    out, counts = redact_value(value)
    assert out == {"\udc80password": "[REDACTED:password]", 3: "x", ("a", "b"): "y"}
    assert counts == {"password": 1}


def test_redact_value_idempotent() -> None:
    value = {"password": PASSWORD, "nested": [{"api_key": OPAQUE}], "text": f"key {GOOGLE_API_KEY}"}
    once, _ = redact_value(value)
    twice, counts = redact_value(once)
    assert twice is once and counts == {}


# --- the table ----------------------------------------------------------------------------------------------


def test_every_scan_begins_with_a_literal() -> None:
    # The speed design: re skips to a leading literal in C; a leading class, group or lookbehind makes it
    # try every position (10-40x slower). This guards new rules against it.
    for scan in _PLAN:
        first = scan.pattern.pattern[:2]
        literal = first[:1] not in b"([\\.^$|?*+{" or (first[:1] == b"\\" and not first[1:].isalnum())
        assert first and literal, scan.pattern.pattern[:40]


def test_the_docs_list_every_kind() -> None:
    # The docs' list of what is redacted (docs/security.md, "Every kind of marker") is the table, no more and
    # no less.
    page = (Path(__file__).resolve().parent.parent / "docs" / "security.md").read_text(encoding="utf-8")
    start = page.index("### Every kind of marker")
    section = page[start : page.index("\n#", start)]
    listed = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)*)`", section))
    assert listed == {r.kind for r in RULES}
