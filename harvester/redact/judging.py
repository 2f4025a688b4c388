"""Whether a candidate value is a secret: placeholders, code, and the checks the rules call."""

from __future__ import annotations

import re

_PLACEHOLDER_WORDS = frozenset("""
    changeme change_me change-me changeit password passwd pass secret token apikey api_key api-key example
    placeholder redacted hidden masked none null nil undefined true false yes no on off required optional
    todo tbd fixme dummy n/a empty unset default str string bytes int bool boolean any unknown object number
    secretstr sensitive censored omitted removed test data+omitted somerandomstring x-oauth-basic
""".split())  # data+omitted: kubectl config view; somerandomstring: Laravel 5's .env.example APP_KEY;
# x-oauth-basic: the password GitHub takes beside a token given as the user name

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
_ESCAPED_BREAKS = (b"\\n", b"\\r")  # a line break inside a JSON string, as the text holds it


def line_start(low: bytes, pos: int) -> int:
    """Where the line holding ``pos`` starts: after a line break, real or JSON-escaped (``\\n``)."""
    real = low.rfind(b"\n", 0, pos) + 1
    escaped = low.rfind(b"\\n", real, pos)
    return escaped + 2 if escaped >= 0 else real


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
    if ks and low[ks - 1 : ks + 1] in _ESCAPED_BREAKS:
        ks += 1  # "\nDB_PASSWORD=": the n belongs to the escape, the key starts a line of JSON-escaped text
    key = low[ks:kend]
    if key in _NOT_SECRET_KEYS:
        return False
    before = low[ks - 1 : ks] if ks and low[ks - 2 : ks] not in _ESCAPED_BREAKS else b"\n"
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
    line = low[line_start(low, ks) : ks]
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
    v = text[m.start("v") : m.end("v")]
    if "\n" in v:
        # Cut by a line break (a wrapped line): unless the URL ended at a port and the next line is a user
        # name (http://localhost:8080 / admin@example.com), the two halves are one password.
        head, _, tail = v.partition("\n")
        if (head.rstrip("\r").isdigit() and len(head.rstrip("\r")) <= 5) or not tail:
            return False
        v = head.rstrip("\r") + tail
    if _is_placeholder(v):
        return False
    return not text.startswith(("sha256:", "sha512:"), m.end())  # docker://image:tag@sha256:... is a pin


def _url_user_token(text: str, m: re.Match[bytes]) -> bool:
    # https://<token>@github.com/..., https://<token>:x-oauth-basic@...: a user name of 20+ letters and digits,
    # no dot, is a token (a person's name or an e-mail address has no digit, or a dot).
    group = "u" if m.start("u") >= 0 else "pu"
    u = text[m.start(group) : m.end(group)]
    return (len(u) >= 20 and _TOKEN_USER.fullmatch(u) is not None and any(c.isdigit() for c in u)
            and any(c.isalpha() for c in u) and not _is_placeholder(u))


_TOKEN_USER = re.compile(r"[A-Za-z0-9_-]+")


def _signed_value(text: str, m: re.Match[bytes]) -> bool:
    # A signature or a credential in a URL's query: generated (a digit, or a %-escape of base64), no
    # placeholder (<signature-value>, ${SIG}).
    v = text[m.start("v") : m.end("v")]
    return not _is_placeholder(v) and (any(c.isdigit() for c in v) or "%" in v)


_B64_AUTH = re.compile(rb"[A-Za-z0-9+/]{6,}={0,2}")


def _basic_credentials(text: str, m: re.Match[bytes]) -> bool:
    """Docker's ``auths.*.auth``: base64 of ``user:password``, a password after the colon."""
    return _is_user_password_base64(text[m.start("dv") : m.end("dv")].encode("latin-1", "replace"))


def _is_user_password_base64(raw: bytes) -> bool:
    import base64
    import binascii

    if not _B64_AUTH.fullmatch(raw) or len(raw) % 4:
        return False
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return False
    _, colon, password = decoded.partition(b":")
    return bool(colon and password) and decoded.isascii() and decoded.decode().isprintable()


_AUTH_SCHEMES = frozenset(b"bearer basic token bot digest negotiate ntlm apikey sso-key".split())


def _auth_value(text: str, m: re.Match[bytes]) -> bool:
    v = text[m.start("v") : m.end("v")]
    return not (_is_placeholder(v) or _is_code(v) or m.group("v") in _AUTH_SCHEMES
                or m.group("v") == b"authorization")  # authorization = authorization.split()


# .netrc: "machine HOST login USER password PASS" on one line, or one keyword and its value a line under a
# machine (or default) line. The host of a one-line entry names a host (a dot, a port, localhost): "machine
# learning login page password reset" is prose.
# A line may start inside a string (a JSON tool output: {"stdout": "machine ...).
_NETRC_ONE_LINE = re.compile(rb"""(?:\A|["'`\s])(?:machine[ \t]+(?P<host>\S+)|default)"""
                             rb"(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]+\Z")
_NETRC_ENTRY = re.compile(rb"""(?:\A|["'`\s])(?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account|port)[ \t]+\S+)*"""
                          rb"[ \t]*\Z")
_NETRC_FIELD = re.compile(rb"[ \t]*(?:login|account|port)[ \t]+\S+[ \t]*\Z")
_LINES_BACK = 4


def _netrc_password(text: str, m: re.Match[bytes]) -> bool:
    v = text[m.start("nv") : m.end("nv")]
    if len(v) < 3 or _is_placeholder(v):
        return False
    low = m.string
    key = m.start() - 4  # the match starts at the "w" of passw(ord)
    start = line_start(low, key)
    before = low[start:key]
    one = _NETRC_ONE_LINE.search(before)
    if one is not None:
        host = one.group("host")
        return host is None or b"." in host or b":" in host or host == b"localhost"
    if before.strip(b" \t"):
        return False
    # The key starts its line: the lines above it, up to a machine line, hold netrc keywords alone.
    end = start
    for _ in range(_LINES_BACK):
        if end == 0:
            return False
        brk = 2 if low[end - 2 : end] == b"\\n" else 1
        prev = line_start(low, end - brk)
        line = low[prev : end - brk].rstrip(b"\r")
        if _NETRC_ENTRY.search(line):
            return True
        if not _NETRC_FIELD.match(line):
            return False
        end = prev
    return False
