"""Secrets known by where they stand: PEM blocks, URL passwords, Authorization headers, ``key = value``.

``PEM`` comes first in the table (it outranks every other rule: a key block holds base64 that other
rules would cut up); the rest come after the provider formats, which win an overlap with them (a GitHub
token assigned to ``GITHUB_TOKEN`` is a ``github-token``).
"""

from __future__ import annotations

import re

from harvester.redact.commandline import COMMAND_PASSWORD
from harvester.redact.judging import (
    _assigned_secret,
    _auth_value,
    _basic_credentials,
    _netrc_password,
    _pem_body,
    _signed_value,
    _url_password,
    _url_user_token,
)
from harvester.redact.rule import Hook, Rule, Sure, sure

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
    rb"""(?P<q>\\?["'`])?(?P<v>(?(q)(?:(?!(?P=q))[^\n])+|(?:[^\s"'`,;&()\[\]{}<>\\]|\\(?![nrt"]))++"""
    rb"""(?![(\[])))"""
)

# Keys ending in "token" or "key" share one scan (its literal "k" is rare); each rule below takes its own
# spellings (Rule.keys).
_KEY_ENDS = (b"token", b"api_key", b"api-key", b"apikey", b"private_key", b"private-key", b"privatekey",
             b"secret_key", b"secret-key", b"secretkey", b"access_key", b"access-key", b"accesskey", b"app_key",
             b"app-key")


def _behind(words: tuple[bytes, ...]) -> bytes:
    # One lookbehind per width (each is one check at a stop, where twelve cost twelve).
    by_width: dict[int, list[bytes]] = {}
    for w in words:
        by_width.setdefault(len(w), []).append(re.escape(w))
    return b"|".join(b"(?<=" + b"|".join(ws) + b")" for _, ws in sorted(by_width.items()))


_K_ASSIGN = re.compile(
    rb"k(?:en(?<=token)|ey(?:" + _behind(tuple(k for k in _KEY_ENDS if k.endswith(b"key")))
    + rb"|-data(?<=client-key-data)|s(?<=previous_keys)))"
    rb"(?P<flag>" + _behind(tuple(b"-" + k for k in _KEY_ENDS)) + rb")?" + _ASSIGN)

# .netrc's "password VALUE" (a blank alone between them): the value ends its line or comes before another
# netrc keyword; _netrc_password reads the lines around it.
_NETRC = (rb"""(?P<nsep>[ \t]+)(?P<nv>(?:[^\s\\]|\\(?![nrt]))+)"""
          rb"""(?=[ \t]*(?:\r?\n|\\[nr]|\Z)|[ \t]+(?:machine|login|account|macdef|default|port)[ \t])""")
_PASSWORD = re.compile(rb"w(?<=passw)(?P<flag>(?<=-passw))?(?:ord|d)(?:" + _ASSIGN + rb"|" + _NETRC + rb")")

# A URL's userinfo: user:password (the password may hold "@": the last "@" before the host ends it; a wrapped
# line may cut it in two), or a user name alone that is a token (https://<token>@github.com).
_URL_VALUE = rb"""[^\s/?#"'<>\[\]]"""
_URL_USERINFO = re.compile(
    rb"""://(?:(?P<pu>[^\s:/?#@"'<>\[\]]*+):(?P<v>""" + _URL_VALUE + rb"+(?:\r?\n" + _URL_VALUE + rb"+)?|\r?\n"
    + _URL_VALUE + rb"+)@|(?P<u>[A-Za-z0-9_-]{20,}+)@)")

# "auth": an Authorization header's value, or Docker's "auth": "<base64 of user:password>" (config.json's
# auths): one scan for both (a scan costs a pass over all text).
_AUTH = re.compile(
    rb"""auth(?:oriz"""
    rb"""ation\\?["'`]?[ \t]*[:=][ \t]*[fr]?\\?["'`]?(?:(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey"""
    rb"""|sso-key)[ \t]+)?(?P<v>[a-z0-9._~+/=-]{8,}+)(?![(\[])"""
    rb"""|\\?"[ \t]*:[ \t]*\\?"(?P<dv>[a-z0-9+/]{6,}={0,2})\\?")""")

# Where the scanned patterns can match (rule.Sure): _K_ASSIGN at the "k" of "token" or of "key" (", "-data" or
# "s": client-key-data, previous_keys) where what follows can start _ASSIGN's separator (after a closing quote, a
# backslash before it: a blank, ":" or "="); _AUTH at "auth" of "authoriz" or of "auth" and a quote (Docker's);
# _URL_USERINFO at "://". Most "token", "key" and "auth" of a text (tokens, keyword, author) are none of these.
_SEPARATOR = rb"""\\?["'`]?[ \t:=]"""
_AT_K = (Sure(rb"token" + _SEPARATOR, 2), Sure(rb"key(?:-data|s)?" + _SEPARATOR, 0))
_AT_AUTH = (Sure(rb"""auth(?:oriz|\\?")""", 0),)
_AT_URL = (sure(b"://", 0),)
_AT_PASSWORD = (Sure(rb"passw(?:ord|d)" + _SEPARATOR, 4),)  # .netrc's "password x": a blank

PEM = (
    # PEM private keys: -----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]----- up to the
    # matching END line; newlines real or escaped (\n in JSON: GCP service-account "private_key"). Cut short
    # (a truncated tool output, `head key.pem`): as far as the base64 and its headers go.
    Rule("private-key", re.compile(
        rb"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----"
        rb"(?:[\s\S]{0,20000}?-----END (?P=label)PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]+)"),
         check=_pem_body,
         hooks=(Hook(b"A", ahead=b"TE KEY", find=b"-----BEGIN ", sure=sure(b"ATE KEY", 0)),)),
)

CONTEXTS: tuple[Rule, ...] = (
    # scheme://user:password@host: only the password goes (redis://:pw@host has no user). "@" is rare
    # enough for memchr to clear most texts before the "://" scan.
    Rule("url-password", _URL_USERINFO, group="v", needs=(b"@",), check=_url_password, sure=_AT_URL),
    Rule("token", _URL_USERINFO, group="u", needs=(b"@",), check=_url_user_token, sure=_AT_URL),
    Rule("token", _URL_USERINFO, group="pu", needs=(b"@",), check=_url_user_token, sure=_AT_URL),
    # ... and the same where an escaped line break cuts "://" (JSON tool output): "postgres:/\\n/app:pw@db".
    Rule("url-password", re.compile(
        rb"""\\(?:n//?(?<=:/\\n/|:\\n//)|r\\n//?(?<=:/\\r\\n/|:\\r\\n//))"""
        rb"""[^\s:/?#@"'<>\[\]]*:(?P<v>[^\s/?#@"'<>\[\]]+)@"""), group="v",
         needs=(b"@", b"\\"), check=_url_password,
         sure=(sure(b":/\\n/", 2), sure(b":\\n//", 1), sure(b":/\\r\\n/", 2), sure(b":\\r\\n//", 1))),
    # Authorization / Proxy-Authorization headers (HTTP dumps, curl -H, JSON, code); Bearer/Basic/... stays.
    Rule("authorization", _AUTH, group="v", lower=True, check=_auth_value, sure=_AT_AUTH),
    # aws_secret_access_key = (credentials file, env, `aws configure set`), "SecretAccessKey": (STS JSON).
    Rule("aws-secret-access-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"secret_access_key", b"secret-access-key", b"secretaccesskey"), sure=_AT_K),
    # api_key= apikey: x-api-key: OPENAI_API_KEY= apiKey:
    Rule("api-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"api_key", b"api-key", b"apikey"), sure=_AT_K),
    # private_key= (hex wallet keys, base64 ed25519 seeds; PEM blocks were taken by the first rule), and a
    # kubeconfig's client-key-data: (the base64 of a PEM key).
    Rule("private-key", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"private_key", b"private-key", b"privatekey", b"client-key-data"), sure=_AT_K),
    # secret_key= (Django SECRET_KEY, MinIO/S3 secretKey), app_key= (Laravel's APP_KEY=base64:..., and its
    # APP_PREVIOUS_KEYS).
    Rule("secret", _K_ASSIGN, group="v", lower=True, check=_assigned_secret,
         keys=(b"secret_key", b"secret-key", b"secretkey", b"app_key", b"app-key", b"previous_keys"), sure=_AT_K),
    # password= passwd: --password x (DB_PASSWORD, PGPASSWORD, userPassword); .netrc's "password x".
    Rule("password", _PASSWORD, group="v", lower=True, check=_assigned_secret, sure=_AT_PASSWORD),
    Rule("password", _PASSWORD, group="nv", lower=True, check=_netrc_password, sure=_AT_PASSWORD),
    # secret= client_secret: SECRET= webhook_secret:
    Rule("secret", re.compile(rb"cret(?<=secret)(?P<flag>(?<=-secret))?" + _ASSIGN), group="v", lower=True,
         check=_assigned_secret, sure=(Sure(rb"secret" + _SEPARATOR, 2),)),
    # token= access_token: GITHUB_TOKEN= x-auth-token: refreshToken:
    Rule("token", _K_ASSIGN, group="v", lower=True, check=_assigned_secret, keys=(b"token",), sure=_AT_K),
    # A signed URL's signature: X-Amz-Signature= (S3), X-Goog-Signature= (GCS), Signature= (CloudFront, S3 v2),
    # sig= (a SAS token without its version, Service Bus). Found at the "g".
    Rule("token", re.compile(rb"(?:(?<=[?&;])|(?<=[?&;]x-amz-)|(?<=[?&;]x-goog-)|(?<=\\u0026))signature="
                             rb"(?P<v>[a-z0-9%+/=_.~-]{16,})"), group="v", lower=True, check=_signed_value,
         hooks=(Hook(b"g", ahead=rb"nature=(?<=signature=)", back=2, low=True, sure=sure(b"signature=", 2)),)),
    Rule("token", re.compile(rb"(?:(?<=[?&;])|(?<=\\u0026))sig=(?P<v>[a-z0-9%+/=_.~-]{16,})"), group="v", lower=True,
         check=_signed_value, hooks=(Hook(b"g", ahead=rb"=(?<=sig=)", back=2, low=True, sure=sure(b"sig=", 2)),)),
    # Docker's config.json: "auth": "<base64 of user:password>" (auths.<registry>.auth).
    Rule("password", _AUTH, group="dv", lower=True, check=_basic_credentials, sure=_AT_AUTH),
    # curl -u user:PASS, sshpass -p PASS, mysql -pPASS, docker login -p PASS ... (commandline.py)
    COMMAND_PASSWORD,
)
