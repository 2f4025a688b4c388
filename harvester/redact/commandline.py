"""Passwords on a command line: ``curl -u user:PASS``, ``sshpass -p PASS``, ``mysql -pPASS``, ``docker login -p``.

One scan finds the short and long flags that some tool takes a password with (`` -p``, `` -u``, ``--user``,
``-passout``...); the check then reads the command the flag belongs to, back to the start of its simple command
(a line, over backslash-continued lines; a pipe, ``;``, ``&``, a subshell, a JSON string's end), and keeps the
candidate only where a tool of that command takes a password with that flag in that form. ``-p`` is a port to
ssh, psql and redis-cli, "prompt for it" to mysql when a blank follows, a flag of mkdir: the table says who means
a password. The argument is read as the shell reads a word (quotes, a JSON-escaped quote), and only the
password goes: ``curl -u admin:[REDACTED:password]``, ``sshpass -p '[REDACTED:password]' ssh ...``.
"""

from __future__ import annotations

import re

from harvester.redact.judging import _is_placeholder
from harvester.redact.rule import Rule, sure

WHOLE = "whole"  # the argument is the password
USER_PASSWORD = "user:password"  # the part after the first colon; the user part where the password is empty
PASS_PREFIX = "pass:"  # openssl: pass:PASSWORD (env:VAR, file:PATH, fd:N, stdin name where it is)
ATTACHED, SEPARATE, EITHER = "attached", "separate", "either"  # -pPASS, -p PASS (or --flag=PASS), both

Flags = dict[bytes, tuple[str, str]]
_CURL: Flags = {b"-u": (USER_PASSWORD, EITHER), b"--user": (USER_PASSWORD, SEPARATE),
                b"-U": (USER_PASSWORD, EITHER), b"--proxy-user": (USER_PASSWORD, SEPARATE)}
_KEYTOOL: Flags = {b"-" + flag: (WHOLE, SEPARATE) for flag in (
    b"storepass", b"keypass", b"srcstorepass", b"deststorepass", b"srckeypass", b"destkeypass")}
# (tool names, whether the flag belongs to the tool's "login" subcommand only, its password flags)
TOOLS: tuple[tuple[re.Pattern[bytes], bool, Flags], ...] = (
    (re.compile(rb"curl"), False, _CURL),
    (re.compile(rb"https?|xhs?"), False, {b"-a": (USER_PASSWORD, EITHER), b"--auth": (USER_PASSWORD, SEPARATE)}),
    (re.compile(rb"sshpass"), False, {b"-p": (WHOLE, EITHER)}),
    (re.compile(rb"(?:mysql|mariadb)[\w-]*"), False, {b"-p": (WHOLE, ATTACHED)}),
    (re.compile(rb"docker|podman|buildah|skopeo|nerdctl|oc|helm"), True, {b"-p": (WHOLE, EITHER)}),
    (re.compile(rb"(?:redis|valkey|keydb)-cli"), False, {b"-a": (WHOLE, SEPARATE)}),
    (re.compile(rb"mongo(?:sh|dump|restore|export|import|stat|top|files)?"), False, {b"-p": (WHOLE, SEPARATE)}),
    (re.compile(rb"ldap\w+"), False, {b"-w": (WHOLE, EITHER)}),
    (re.compile(rb"sqlcmd|bcp"), False, {b"-P": (WHOLE, EITHER)}),
    (re.compile(rb"openssl"), False, {b"-passin": (PASS_PREFIX, SEPARATE), b"-passout": (PASS_PREFIX, SEPARATE),
                                      b"-pass": (PASS_PREFIX, SEPARATE)}),
    (re.compile(rb"keytool|jarsigner"), False, _KEYTOOL),
    (re.compile(rb"7z[az]?|7zz"), False, {b"-p": (WHOLE, ATTACHED)}),
    (re.compile(rb"zip|unzip"), False, {b"-P": (WHOLE, SEPARATE)}),
)
_SSHPASS_VALUED = (b"-f", b"-d", b"-P")  # sshpass's options that take a value: its command starts after them

# A flag some tool takes a password with, then its argument read as one shell word. The scan stops at "-" and
# looks behind for the blank: a pattern that begins with " " would stop at every blank (50% slower).
_FLAG = re.compile(
    rb"-(?<= -)(?P<flag>-(?:proxy-user|user|auth)|(?:src|dest)?(?:store|key)pass|pass(?:in|out)?|[uUapPw])"
    rb"(?:(?P<sep>=|[ \t]+)|(?<=[pP]))"
    rb"(?P<arg>(?!-)(?:\\?\"[^\"\n]*\\?\"|'[^'\n]*'|[^\s\"'|;&()`\\]|\\(?![nrt]))+)")
# Where a simple command starts: after one of these (a newline only if the line before does not end with "\").
_COMMAND_BREAK = re.compile(rb"[|;&()`]|\\[nr]|\",\s*\"|\n")
_REACH = 2000  # how far back a command is looked for: a few continued lines


def _command_password(text: str, m: re.Match[bytes]) -> tuple[int, int] | bool:
    flag, sep = b"-" + m.group("flag"), m.group("sep")
    form = ATTACHED if sep is None else SEPARATE
    how = _how(m.string, m.start(), flag, form)
    if how is None:
        return False
    kept = _unquoted(m.string, m.start("arg"), m.end("arg"))
    value = "".join(text[i] for i in kept)
    if _is_placeholder(value):
        return False
    if how == PASS_PREFIX:
        if not value.startswith("pass:"):
            return False
        kept = kept[5:]
    elif how == USER_PASSWORD:
        colon = value.find(":")
        if colon < 0:
            return False  # no password: the tool prompts for it
        # -u "KEY:" (an API key as the user, an empty password): the user part is the secret.
        kept = kept[colon + 1 :] or kept[:colon]
    secret = "".join(text[i] for i in kept)
    if len(secret) < 3 or _is_placeholder(secret):
        return False
    return kept[0], kept[-1] + 1


def _how(raw: bytes, at: int, flag: bytes, form: str) -> str | None:
    """How the argument of ``flag`` holds a password, if a tool of the command ending at ``at`` takes one."""
    window = raw[max(0, at - _REACH) : at]
    start = 0
    for brk in reversed(list(_COMMAND_BREAK.finditer(window))):
        if brk.group() == b"\n" and window[: brk.start()].rstrip(b" \t\r").endswith(b"\\"):
            continue  # a continued line: the command goes on above
        start = brk.end()
        break
    words = [w.strip(b"\"'{[\\").rsplit(b"/", 1)[-1] for w in window[start:].split()]
    for i in range(len(words) - 1, -1, -1):
        for names, login, flags in TOOLS:
            if not names.fullmatch(words[i]) or flag not in flags:
                continue
            how, takes = flags[flag]
            rest = words[i + 1 :]
            if takes not in (form, EITHER) or (login and b"login" not in rest):
                continue
            if words[i] == b"sshpass" and not _before_its_command(rest):
                continue
            return how
    return None


def _before_its_command(rest: list[bytes]) -> bool:
    """sshpass's own options come before the command it runs (``sshpass -p PW ssh -p 2222 host``)."""
    for j, word in enumerate(rest):
        if not word.startswith(b"-") and not (j and rest[j - 1] in _SSHPASS_VALUED):
            return False
    return True


def _unquoted(raw: bytes, start: int, end: int) -> list[int]:
    """The positions of the characters a shell keeps of the word ``raw[start:end]`` (quotes go; a backslash
    before a quote is JSON's escape of it)."""
    kept: list[int] = []
    quote = 0
    for i in range(start, end):
        c = raw[i]
        if c == 0x5C and i + 1 < end and raw[i + 1] in (0x22, 0x27):
            continue
        if c in (0x22, 0x27) and (quote == 0 or quote == c):
            quote = c if quote == 0 else 0
            continue
        kept.append(i)
    return kept


# Where _FLAG can match: at the "-" of " -" and each flag it takes (" -pass..." starts as " -p").
_AT_FLAG = tuple(sure(b" -" + flag, 1) for flag in (
    b"-proxy-user", b"-user", b"-auth", b"srcstorepass", b"srckeypass", b"deststorepass", b"destkeypass",
    b"storepass", b"keypass", b"u", b"U", b"a", b"p", b"P", b"w"))
COMMAND_PASSWORD = Rule("password", _FLAG, group="arg", check=_command_password, sure=_AT_FLAG)
