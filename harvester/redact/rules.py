"""The table of rules: what each kind looks like, in the order that settles overlaps."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harvester.redact.judging import _assigned_secret, _auth_value, _pem_body, _random_body, _url_password


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # the marker's name
    pattern: re.Pattern[bytes]  # searched in the text as Latin-1 bytes, or in their lowercase
    group: int | str = 0  # the part of a match that is replaced
    # Skip the rule unless this literal (``in``) or pattern (``search``) occurs. Rules sharing one
    # prefilter object share its result, which is the point: one scan clears several rules.
    prefilter: bytes | re.Pattern[bytes] | None = None
    lower: bool = False  # search the lowercased bytes (case-insensitive keys)
    keys: tuple[bytes, ...] = ()  # for a pattern shared by several kinds: the key ends with one of these
    check: Callable[[str, re.Match[bytes]], bool] | None = None  # vetoes a candidate; gets the text


# After a keyword (lowercase bytes), which each pattern follows with an optional empty group "flag" that
# takes part when a "-" stands right before the keyword (--password, --db-password): the key must end
# there; an optional closing quote of a quoted key (also backslash-escaped: JSON printed inside a log); a
# separator: an annotation ending in " =" (password: str = / apiKey: string | null =), = : := => (not ==
# :: =~), or blanks alone after a flag; then the value: quoted up to the same quote, or bare up to a blank
# or a delimiter and not followed by ( or [ (a call or an index is code).
_ASSIGN = (
    rb"""(?P<kend>)(?![a-z0-9_])\\?["'`]?"""
    rb"""(?P<sep>[ \t]*:[ \t]*[a-z_][\w.]*+(?:\[[^\]\n]{0,80}\])?(?:[ \t]*\|[ \t]*[a-z_][\w.]*+){0,8}"""
    rb"""[ \t]+=(?![=>])[ \t]*"""
    rb"""|[ \t]*(?:=>|:=|[:=](?![=:~]))[ \t]*|(?(flag)[ \t]+|(?!)))"""
    rb"""(?P<q>\\?["'`])?(?P<v>(?(q)(?:(?!(?P=q))[^\n])+|[^\s"'`,;&()\[\]{}<>]++(?![(\[])))"""
)

# Prefilters shared by several rules (raw bytes).
_J = re.compile(rb"J(?<=eyJ)")  # JWT
_SK = re.compile(  # sk- keys, Stripe, Slack webhooks
    rb"k(?:-(?<=sk-)|_(?:live|test)_(?<=[sr]k_live_|[sr]k_test_)|s\.slack\.com/(?<=hooks\.slack\.com/))")
_G = re.compile(rb"g(?:h[pousr]_|ithub_pat_|l(?:pat|dt|rt|cbt|ptt|ft|imt|agent|soat|oas|ffct|ddt)-)")
_A = re.compile(rb"A(?:[KS]IA|Iza|TE KEY)")  # AWS, Google, and PEM's "PRIVATE KEY"

# Keys ending in "token" or "key" share one scan (its literal "k" is rare); each rule below takes its own
# spellings (Rule.keys).
_K_ASSIGN = re.compile(
    rb"k(?:en(?<=token)|ey(?:(?<=api_key)|(?<=api-key)|(?<=apikey)|(?<=private_key)|(?<=private-key)"
    rb"|(?<=privatekey)|(?<=secret_key)|(?<=secret-key)|(?<=secretkey)|(?<=access_key)|(?<=access-key)"
    rb"|(?<=accesskey)))"
    rb"(?P<flag>(?<=-token)|(?<=-api_key)|(?<=-api-key)|(?<=-apikey)|(?<=-private_key)|(?<=-private-key)"
    rb"|(?<=-privatekey)|(?<=-secret_key)|(?<=-secret-key)|(?<=-secretkey)|(?<=-access_key)|(?<=-access-key)"
    rb"|(?<=-accesskey))?" + _ASSIGN)

RULES: tuple[Rule, ...] = (
    # PEM private keys: -----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]----- up to the
    # matching END line; newlines real or escaped (\n in JSON: GCP service-account "private_key"). Cut short
    # (a truncated tool output, `head key.pem`): as far as the base64 and its headers go.
    Rule("private-key", re.compile(
        rb"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----"
        rb"(?:[\s\S]{0,20000}?-----END (?P=label)PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]+)"),
         prefilter=_A, check=_pem_body),
    # JWT: base64url header "eyJ..." . payload "eyJ..." . signature (empty when unsigned).
    Rule("jwt", re.compile(
        rb"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), prefilter=_J),
    # Anthropic: sk-ant-api03-<93>AA, sk-ant-admin01-..., sk-ant-oat01-... (OAuth).
    Rule("anthropic-api-key", re.compile(rb"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)(?P<body>[A-Za-z0-9_-]{20,})"),
         prefilter=_SK, check=_random_body),
    # OpenAI-style: sk-<48 base62> (legacy), sk-proj-..., sk-svcacct-..., sk-admin-... (base64url bodies).
    Rule("openai-api-key", re.compile(
        rb"sk-(?<![A-Za-z0-9_-]sk-)(?:proj-|svcacct-|admin-|None-)?(?P<body>[A-Za-z0-9_-]{20,})"),
         prefilter=_SK, check=_random_body),
    # GitHub: ghp_ (classic PAT), gho_ (OAuth), ghu_ (user-to-server), ghs_ (app installation), ghr_
    # (refresh) + 36+ base62; github_pat_<22>_<59> (fine-grained PAT).
    Rule("github-token", re.compile(
        rb"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{50,})(?![A-Za-z0-9_])"),
         prefilter=_G),
    # GitLab: glpat- (personal/project/group access), gldt- (deploy), glrt- (runner), glcbt- (CI job), glptt-
    # (pipeline trigger), glft- (feed), glimt- (incoming mail), glagent- (k8s agent), glsoat- (SCIM),
    # gloas- (OAuth app secret), glffct- (feature flags), glddt- (dependency proxy) + 20+ base64url.
    Rule("gitlab-token", re.compile(
        rb"gl(?<![A-Za-z0-9_]gl)(?:pat|dt|rt|cbt|ptt|ft|imt|agent|soat|oas|ffct|ddt)-[A-Za-z0-9_-]{20,}"),
         prefilter=_G),
    # Slack: xoxb- (bot), xoxp- (user), xoxa-/xoxr- (app/refresh), xoxs-, xoxo-, xoxe.xoxp-/xoxe- (rotating),
    # xapp- (app-level); bodies are dash-separated numbers and base62.
    Rule("slack-token", re.compile(
        rb"x(?<![A-Za-z0-9_]x)(?:ox[abposre]|app)[.-](?P<body>[A-Za-z0-9.-]{9,}[A-Za-z0-9])"),
         check=_random_body),
    # Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../<24>; the host stays readable.
    Rule("slack-webhook", re.compile(
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{20,})"),
         group="v", prefilter=_SK),
    # Stripe: sk_live_/sk_test_ (secret), rk_live_/rk_test_ (restricted) + 16+ base62. Two rules so that
    # each pattern begins with a literal.
    Rule("stripe-key", re.compile(rb"sk_(?<![A-Za-z0-9_]sk_)(?:live|test)_(?P<body>[A-Za-z0-9]{16,})"),
         prefilter=_SK, check=_random_body),
    Rule("stripe-key", re.compile(rb"rk_(?<![A-Za-z0-9_]rk_)(?:live|test)_(?P<body>[A-Za-z0-9]{16,})"),
         prefilter=_SK, check=_random_body),
    # Google API keys (GCP, Firebase, Maps): AIza + 35 base64url.
    Rule("google-api-key", re.compile(rb"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
         prefilter=_A),
    # AWS access key ids: AKIA (long-term) / ASIA (temporary, STS) + 16 base32.
    Rule("aws-access-key-id", re.compile(rb"A[KS]IA(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
         prefilter=_A),
    # scheme://user:password@host: only the password goes (redis://:pw@host has no user). "@" is rare
    # enough for memchr to clear most texts before the "://" scan.
    Rule("url-password", re.compile(rb"""://[^\s:/?#@"'<>\[\]]*:(?P<v>[^\s/?#@"'<>\[\]]+)@"""), group="v",
         prefilter=b"@", check=_url_password),
    # Authorization / Proxy-Authorization headers (HTTP dumps, curl -H, JSON, code); Bearer/Basic/... stays.
    Rule("authorization", re.compile(
        rb"""z(?<=authoriz)ation\\?["'`]?[ \t]*[:=][ \t]*[fr]?\\?["'`]?"""
        rb"""(?:(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|sso-key)[ \t]+)?"""
        rb"""(?P<v>[a-z0-9._~+/=-]{8,}+)(?![(\[])"""),
         group="v", lower=True, check=_auth_value),
    # aws_secret_access_key = (credentials file, env, `aws configure set`), "SecretAccessKey": (STS JSON).
    Rule("aws-secret-access-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"secret_access_key", b"secret-access-key", b"secretaccesskey")),
    # api_key= apikey: x-api-key: OPENAI_API_KEY= apiKey:
    Rule("api-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"api_key", b"api-key", b"apikey")),
    # private_key= (hex wallet keys, base64 ed25519 seeds; PEM blocks were taken by the first rule).
    Rule("private-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"private_key", b"private-key", b"privatekey")),
    # secret_key= (Django SECRET_KEY, MinIO/S3 secretKey).
    Rule("secret", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"secret_key", b"secret-key", b"secretkey")),
    # password= passwd: --password x (DB_PASSWORD, PGPASSWORD, userPassword).
    Rule("password", re.compile(rb"w(?<=passw)(?P<flag>(?<=-passw))?(?:ord|d)" + _ASSIGN), group="v",
         lower=True, check=_assigned_secret),
    # secret= client_secret: SECRET= webhook_secret:
    Rule("secret", re.compile(rb"cret(?<=secret)(?P<flag>(?<=-secret))?" + _ASSIGN), group="v", lower=True,
         check=_assigned_secret),
    # token= access_token: GITHUB_TOKEN= x-auth-token: refreshToken:
    Rule("token", _K_ASSIGN, group="v", lower=True, check=_assigned_secret, keys=(b"token",)),
)
