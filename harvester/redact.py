"""Redaction of secrets from every text before it reaches the bank.

``redact(text)`` returns the text with each secret replaced by ``[REDACTED:<kind>]`` and a count per
kind. ``redact_value(value)`` does the same over a JSON-like value and also redacts the string values
of keys that name a secret (``{"password": "hunter2"}``, ``{"name": "DB_PASSWORD", "value": ...}``).
Both return the very object they were given when nothing was found, so the clean case allocates
nothing and callers can test identity. ``redact`` is idempotent and never redacts a marker.

What is found (``RULES``; the kind is the marker's name, lowercase-with-hyphens; on an overlap the
earlier rule wins)
    Formats that announce themselves: PEM private keys (the whole BEGIN ... END block, also inside a
    JSON string with escaped newlines as in a GCP service-account file; a block cut short goes as far
    as its base64 does), JWTs, Anthropic keys, OpenAI-style ``sk-`` keys, GitHub and GitLab tokens,
    Slack tokens and webhook URLs, Stripe secret/restricted keys, Google API keys, AWS access key ids.
    Then secrets known by where they stand: the password of a URL
    (``postgres://app:[REDACTED:url-password]@db``), ``Authorization`` headers (the scheme stays:
    ``Authorization: Bearer [REDACTED:authorization]``), and values assigned to a key that ends with
    ``password``/``passwd``, ``secret`` (``client_secret``), ``secret_key``, ``token``
    (``access_token``, ``GITHUB_TOKEN``), ``api_key``/``apikey``/``api-key``, ``private_key``, or
    ``secret_access_key`` (AWS), with ``=``, ``:``, ``:=``, ``=>``, an annotation (``password: str =``),
    quotes (also backslash-escaped ones: JSON inside a log), or as a CLI flag (``--password xyz``).
    The key stays readable; only the value goes.

Decisions
    * Stripe: ``sk_live_``/``sk_test_``/``rk_live_``/``rk_test_`` are redacted (test keys still read
      and write a real account's test data). ``pk_live_``/``pk_test_`` are NOT: publishable keys are
      public by design, shipped in every checkout page. ``whsec_`` has no rule of its own; it is caught
      where it is assigned (``STRIPE_WEBHOOK_SECRET=whsec_...``).
    * ``sk-`` keys are reported as ``openai-api-key`` although other providers copied the format;
      ``sk-ant-`` is told apart as ``anthropic-api-key``. A prefixed token whose body has no digit and only
      one case is not a key (``sk-learn-style-names``, ``sk_test_fixtures_dir``).
    * Placeholders stay, as they hide nothing: empty values, ``${VAR}``/``$VAR``/``$(cmd)``,
      ``{name}``/``{{ tpl }}``, values made only of format fields (``%s``, ``%(pw)s``,
      ``{user}:{password}``), ``%VAR%``, ``<your password>``, ``[REDACTED]`` and our markers, one
      character repeated (``****``, ``xxxx``), values already masked (``ab***yz``, ``sk-...``),
      UPPER_SNAKE names (``YOUR_API_KEY``), values starting with ``your``/``enter``/``replace``, a
      ``#rrggbb`` colour, and a short list of words: ``changeme``, ``password``, ``secret``, ``none``,
      ``null``, ``true``, ``required``, type names (``str``, ``string``, ``SecretStr``)... ``changeme``
      and its like are public defaults: a reader learns nothing from them, so the text stays readable.
    * Code is not a secret. A quoted literal, a number of 6+ digits, or a value with punctuation
      (base64, ``s3cr3t!``) is redacted; a call, an index or an attribute path (``get_token()``,
      ``os.environ["X"]``, ``self.password``) and a filesystem path are code and stay. A bare word
      (``password=password``, ``token = tok``, ``token: Token``, ``{token: tok}``) is code, except where
      the syntax makes a bare word a literal: a shell/env assignment to an UPPER_CASE key or at the
      start of a line (``DB_PASSWORD=hunter``, no blanks around ``=``), a CLI flag (``--password
      hunter``, but not ``the --password option``), a URL query or connection string (``?token=abc``,
      ``;Password=abc``), Java-style properties (``db.password=hunter``) and a YAML mapping line that
      the lowercase word ends (``  password: hunter``). A word that mixes letters and digits
      (``hunter2``) or a long random-looking one is redacted everywhere. Values under 3 characters
      and numbers under 6 digits (counts, ids, ports) never are.
    * Keys are matched case-insensitively and must END with the keyword, so ``max_tokens``,
      ``tokenizer``, ``token_type``, ``password_hash``, ``secrets:`` and ``secret_name`` are not keys
      of a secret; pagination cursors (``next_token``, ``pageToken``) and tokenizer specials
      (``eos_token``) are exempt by name. Not keys in text: ``pwd`` (``PWD`` is the working directory),
      ``access_key`` alone (MinIO's is the public half), ``passphrase`` (a keyword costs a scan; JSON
      keys named so are still redacted by ``redact_value``), cookies.
    * When in doubt, redaction errs toward removing: a quoted sentence assigned to ``token`` goes too.

Speed
    This runs over hundreds of MB of tool output, almost all of it without secrets, so the clean case
    is what is designed for. The text is turned once into bytes (Latin-1, other characters as ``?``:
    one byte per character, so a span found in the bytes is the same span of the text) and once into
    their ASCII lowercase. ``re`` scans fast (~3 GB/s) only a pattern that begins with a literal: it
    then skips from one occurrence of the literal's first character to the next in C. A pattern that
    begins with a class, an alternation of different letters, a lookbehind or ``(?i)`` is tried at
    every position and runs 10-40x slower, and so does one big alternation of all rules (15-30 MB/s).
    So every pattern here begins with a literal, chosen rare (``J(?<=eyJ)``, ``cret(?<=secret)``: the
    lookbehind after it checks the rest); keys are searched in the lowercase copy instead of with
    ``(?i)``; rules share scans: the token formats sit behind four prefilters that clear them by the
    group, and keys ending in ``token`` or ``key`` share one pattern (``Rule.keys`` tells them apart).
    A clean text costs about ten scans and ~2 us of Python; checks written in Python run only on
    candidates. ``bench/bench_redact.py`` measures it against ``str.count("\\n")`` on the same text.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MARKER = "[REDACTED:{}]"


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


# --- judging a value --------------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset("""
    changeme change_me change-me changeit password passwd pass secret token apikey api_key api-key example
    placeholder redacted hidden masked none null nil undefined true false yes no on off required optional
    todo tbd fixme dummy n/a empty unset default str string bytes int bool boolean any unknown object number
    secretstr sensitive censored omitted removed
""".split())

# The start of a value that refers to or stands for a secret. ``$`` only before a name, a brace or a
# parenthesis: ``$2b$12$...`` (a bcrypt hash) and ``$ecret!`` are values.
_REFERENCE = re.compile(r"\$[{(A-Za-z_]|[<\[{]|%\(|(?:your|enter|insert|replace)[-_ ]", re.I)
_TEMPLATE = re.compile(r"%\w+%")  # cmd.exe
_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
_FORMAT_FIELD = re.compile(r"%(?:\(\w+\))?[sdrx]|\{[^{}]*\}")  # printf, str.format, f-strings
_UPPER_SNAKE = re.compile(r"[A-Z]+(?:_[A-Z]+)+")  # YOUR_API_KEY; not PROD_PASS_2024
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTR_PATH = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]*)+")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{20,}={0,2}")


def _is_placeholder(v: str) -> bool:
    s = v.strip()
    if not s or _REFERENCE.match(s) or _TEMPLATE.fullmatch(s) or s.lower() in _PLACEHOLDER_WORDS:
        return True
    if len(set(s)) == 1 or "***" in s or "..." in s or "…" in s or "•" in s:
        return True  # ******, xxxx, and values the printing tool already masked
    if _COLOR.fullmatch(s):
        return True  # a style sheet's "#ddd0c0" under a pygments Token key
    if "%" in s or "{" in s:
        rest = _FORMAT_FIELD.sub("", s)
        if rest != s and not any(c.isalnum() for c in rest):
            return True  # "%s:%s", "{user}:{password}"
    return bool(_UPPER_SNAKE.fullmatch(s))


def _is_code(v: str) -> bool:
    # A call, an index, an attribute path or a filesystem path: it names where a secret is. Base64 has
    # slashes too: an AWS secret key may start with one.
    if "(" in v or "[" in v or _ATTR_PATH.fullmatch(v):
        return True
    return bool(_PATH.fullmatch(v)) and not (_BASE64.fullmatch(v) and _mixed(v) and not v.islower())


def _mixed(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _random_word(v: str) -> bool:
    # 20+ characters, both cases, no separator: a generated key, not a type or a variable name.
    return len(v) >= 20 and "_" not in v and not v.islower() and not v.isupper()


_KEY_START = re.compile(rb"[\w.-]*\Z")
_PROSE_WORDS = frozenset("""option options flag flags argument arguments parameter parameters field prompt
    value and or is are was to the for with instead when if""".split())  # "the --password option"
_NOT_SECRET_KEYS = frozenset(k.encode() for k in """
    next_token nexttoken next-token page_token pagetoken continuation_token continuationtoken sync_token
    synctoken cancel_token canceltoken cancellation_token cancellationtoken resume_token resumetoken
    bos_token eos_token pad_token unk_token sep_token cls_token mask_token start_token end_token
    --password-stdin
""".split())


def _assigned_secret(text: str, m: re.Match[bytes]) -> bool:
    """Whether the value of a ``key = value`` candidate is a secret; see the module docstring."""
    vs, ve = m.span("v")
    v = text[vs:ve]
    if len(v) < 3 or _is_placeholder(v) or (v.isdigit() and len(v) < 6):
        return False  # short numbers are counts, ids, ports; 123456 and up may be a PIN or a password
    low = m.string
    kend = m.start("kend")
    key_tail = _KEY_START.search(low, max(0, kend - 80), kend)  # DB_ of DB_PASSWORD, -- of --password
    ks = key_tail.start() if key_tail else kend
    key = low[ks:kend]
    if key in _NOT_SECRET_KEYS:
        return False
    before = low[ks - 1 : ks] if ks else b"\n"
    if before in (b"/", b"\\", b"$") or low[ks - 2 : ks] == b"${":
        return False  # a path (/etc/passwd: ...) or a reference (${GITHUB_TOKEN:?unset})
    sep = m.group("sep").strip()
    flag = key.startswith(b"-")
    if not sep and (not flag or v.lower() in _PROSE_WORDS):
        return False  # blanks alone separate a value only after a --flag, not in "the --password option"
    if before == b"{" and m.group("sep") == b":" and m.group("q") is None:
        return False  # a format spec: f"{token:02x}"
    if m.group("q") is not None:
        # A quoted literal; unless the "quote" closes a string the key was in: print("Token: " + t),
        # prompt='Password: ', stream=None.
        return not (v[0].isspace() or v[0] in ",;)+.")
    if _is_code(v):
        return False
    if not _IDENT.fullmatch(v) or _mixed(v) or _random_word(v):
        return True  # a number, punctuation, base64, letters mixed with digits
    # A bare word is a literal only where the syntax makes it one: a --flag, a URL query or a connection
    # string, shell and env files (DB_PASSWORD=hunter, no blanks around "="), properties
    # (db.password=hunter), a YAML mapping line with a lowercase word ("  password: hunter"). Not
    # password=pw in a call, TOKEN = tok, self.key = key, token: Token, {token: tok}.
    if flag or before in (b"?", b"&", b";"):
        return True
    line = low[low.rfind(b"\n", 0, ks) + 1 : ks]
    if m.group("sep") == b"=":
        key_text = text[ks:kend]
        return key_text.upper() == key_text or b"." in key or line in (b"", b"export ")
    key_quoted = low[kend : kend + 1] in (b"'", b'"', b"\\")
    eol = low.find(b"\n", ve)
    rest = low[ve : eol if eol >= 0 else len(low)].strip()
    # The word must end its line: "Token: foreground," is a Python dict.
    return (sep == b":" and not key_quoted and v.islower() and not line.strip(b" \t-")
            and (not rest or rest.startswith(b"#")))


def _random_body(text: str, m: re.Match[bytes]) -> bool:
    """The part after a token's prefix looks generated: a digit, or both cases (not sk_test_fixtures)."""
    body = text[m.start("body") : m.end("body")]
    return any(c.isdigit() for c in body) or (not body.islower() and not body.isupper())


def _pem_body(text: str, m: re.Match[bytes]) -> bool:
    # A key has base64; a "-----BEGIN PRIVATE KEY-----\n...\n-----END" in docs or code has none.
    return _BASE64_RUN.search(m.string, m.start(), m.end()) is not None


_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]{40}")


def _url_password(text: str, m: re.Match[bytes]) -> bool:
    if _is_placeholder(text[m.start("v") : m.end("v")]):
        return False
    return not text.startswith(("sha256:", "sha512:"), m.end())  # docker://image:tag@sha256:... is a pin


_AUTH_SCHEMES = frozenset(b"bearer basic token bot digest negotiate ntlm apikey sso-key".split())


def _auth_value(text: str, m: re.Match[bytes]) -> bool:
    v = text[m.start("v") : m.end("v")]
    return not (_is_placeholder(v) or _is_code(v) or m.group("v") in _AUTH_SCHEMES
                or m.group("v") == b"authorization")  # authorization = authorization.split()


# --- the rules --------------------------------------------------------------------------------------------

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


# The table grouped for scanning, in table order: (prefilter, lowercase?, ((pattern, ((rule index, rule),
# ...)), ...)). Each prefilter and each pattern then runs once per text however many rules share it.
def _plan(rules: tuple[Rule, ...]) -> tuple[tuple[Any, bool, tuple[Any, ...]], ...]:
    groups: dict[tuple[Any, bool], dict[re.Pattern[bytes], list[tuple[int, Rule]]]] = {}
    for i, rule in enumerate(rules):
        groups.setdefault((rule.prefilter, rule.lower), {}).setdefault(rule.pattern, []).append((i, rule))
    return tuple((pre, lower, tuple((pat, tuple(rs)) for pat, rs in pats.items()))
                 for (pre, lower), pats in groups.items())


_PLAN = _plan(RULES)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """The text with each secret replaced by ``[REDACTED:<kind>]``, and how many of each kind.

    Returns ``text`` itself and ``{}`` when nothing was found.

    Idempotent by construction: after a pass that redacted something, the lines holding a marker are
    passed again until a pass finds nothing. A second pass finds more only where markers changed what a
    pattern sees: a rule that lost an overlap to another reads the text differently once the winner is a
    marker, a token glued to a redacted one gains a boundary. Only those lines need it: every match and
    every check's context lies within one line (values, keys and tokens stop at a newline), except a
    PEM block, which outranks every other rule and so never loses an overlap.
    """
    counts: dict[str, int] = {}
    new = _redact_once(text, counts)
    if new is text:
        return text, counts
    for _ in range(8):  # each pass only turns text into markers, so this ends; 8 is far beyond need
        again = _marked_lines_once(new, counts)
        if again is new:
            break
        new = again
    return new, counts


def _marked_lines_once(text: str, counts: dict[str, int]) -> str:
    """One more pass over each line of ``text`` that holds a marker; ``text`` itself if none changed."""
    parts: list[str] = []
    done = 0  # text[:done] is in parts
    pos = text.find("[REDACTED:")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[start:end]
        again = _redact_once(line, counts)
        if again is not line:
            parts += (text[done:start], again)
            done = end
        pos = text.find("[REDACTED:", end)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _redact_once(text: str, counts: dict[str, int]) -> str:
    """One pass of ``redact``: ``text`` itself when nothing was found, adding to ``counts`` otherwise."""
    if len(text) < 8:
        return text  # shorter than any rule's shortest match
    # One byte per character, so a span in the bytes is the same span of the text. Latin-1 because it
    # costs a copy where ASCII with "replace" checks every character; bytes >= 0x80 are neither \s nor
    # \w nor cased, so no rule treats "é" differently from the "?" that stands for "→".
    raw = text.encode("latin-1", "replace")
    low = raw.lower()
    found: list[tuple[int, int, int, str]] = []  # (rule index, start, end, kind)
    for pre, lower, scans in _PLAN:
        hay = low if lower else raw
        if pre is not None and (pre not in hay if type(pre) is bytes else pre.search(hay) is None):
            continue
        for pattern, rules in scans:
            first = pattern.search(hay)  # the common case, clean text, costs this one call
            if first is None:
                continue
            for m in pattern.finditer(hay, first.start()):
                for i, rule in rules:
                    start, end = m.span(rule.group)
                    if start >= end:
                        continue
                    if rule.keys:
                        kend = m.start("kend")
                        if not hay[max(0, kend - 24) : kend].endswith(rule.keys):
                            continue
                    # A span over a marker is a candidate that lost to another rule the first time round;
                    # it must lose again, or a second pass would redact differently.
                    if (rule.check is None or rule.check(text, m)) and "[REDACTED:" not in text[start:end]:
                        found.append((i, start, end, rule.kind))
    if not found:
        return text
    # Earlier rules win an overlap (a github token assigned to GITHUB_TOKEN is a github_token): take the
    # candidates by rule, keeping the taken spans sorted to test only the two neighbours of each.
    found.sort()
    starts: list[int] = []
    kept: list[tuple[int, int, str]] = []
    for _, start, end, kind in found:
        j = bisect.bisect_right(starts, start)
        if (j and kept[j - 1][1] > start) or (j < len(kept) and kept[j][0] < end):
            continue
        starts.insert(j, start)
        kept.insert(j, (start, end, kind))
    parts: list[str] = []
    pos = 0
    for start, end, kind in kept:
        parts.append(text[pos:start])
        parts.append(MARKER.format(kind))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# --- JSON-like values -------------------------------------------------------------------------------------

# A key (lowercased) that ends with one of these names a secret; first match wins.
_KEY_KINDS: tuple[tuple[str, str], ...] = (
    ("secret_access_key", "aws-secret-access-key"), ("secret-access-key", "aws-secret-access-key"),
    ("secretaccesskey", "aws-secret-access-key"),
    ("password", "password"), ("passwd", "password"), ("passphrase", "password"),
    ("secret", "secret"), ("secret_key", "secret"), ("secret-key", "secret"), ("secretkey", "secret"),
    ("token", "token"),
    ("api_key", "api-key"), ("api-key", "api-key"), ("apikey", "api-key"),
    ("private_key", "private-key"), ("private-key", "private-key"), ("privatekey", "private-key"),
    ("authorization", "authorization"),
)
_SCHEME = re.compile(r"((?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|sso-key)\s+)(\S.*)",
                     re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _key_kind(key: str) -> str | None:
    k = key.lower()
    if k.encode("utf-8", "replace") in _NOT_SECRET_KEYS:  # keys may hold lone surrogates
        return None
    for suffix, kind in _KEY_KINDS:
        if k.endswith(suffix):
            return kind
    return None


def _merge(into: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


def _walk(value: Any, kind: str | None, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        new, found = redact(value)
        if found:
            _merge(counts, found)
            return new
        if kind is None or len(value) < 3 or _is_placeholder(value):
            return value
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "authorization" and (m := _SCHEME.fullmatch(value)):
            return m.group(1) + MARKER.format(kind)  # "Bearer [REDACTED:authorization]"
        return MARKER.format(kind)
    if isinstance(value, dict):
        # {"name": "DB_PASSWORD", "value": "..."}: Kubernetes env entries, GitHub/CI variable listings.
        named = value.get("name", value.get("key"))
        named_kind = _key_kind(named) if isinstance(named, str) and "value" in value else None
        out: dict[Any, Any] | None = None
        for k, v in value.items():
            if k == "value" and named_kind:
                k_kind: str | None = named_kind
            else:
                k_kind = _key_kind(k) if isinstance(k, str) else None
            new = _walk(v, k_kind, counts)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new = _walk(v, kind, counts)  # {"tokens": [...]} is not secret, {"token": [...]} is
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        if items is None:
            return value
        return items if isinstance(value, list) else tuple(items)
    return value  # numbers, booleans, None: not secrets even under a secret key


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """``redact`` over a JSON-like value, plus the string values of keys that name a secret.

    Returns ``value`` itself and ``{}`` when nothing was found; otherwise changed containers are copies
    and unchanged ones are shared with the input. Keys are kept as they are; numbers, booleans and
    None stay even under a secret key.
    """
    counts: dict[str, int] = {}
    return _walk(value, None, counts), counts
