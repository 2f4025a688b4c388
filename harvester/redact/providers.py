"""Provider token formats: secrets that announce themselves by a prefix or a structure.

One entry per kind, in priority order (an earlier rule wins an overlap: ``sk-ant-`` before ``sk-``). The
formats are those of the maintained rulesets (gitleaks, betterleaks) that have a recognisable prefix or
structure, written anew; the bodies are as the providers issue them. A format is never scanned for on
its own: its prefixes become hooks of the few shared locator scans (``locate.py``), and its pattern is
matched only where a hook fired.
"""

from __future__ import annotations

import re

from harvester.redact.judging import _random_body
from harvester.redact.rule import ALNUM, B64URL, WORD, Hook, Rule, Sure, ends, starts, sure

# Where a prefix is hooked (see locate.py): on the first rare byte it holds, as in the old prefilters (A,
# J, ~ in the text; k, g, x in its lowercase, so SK... and SG. land there too); else, when it ends with "_",
# behind the underscore's lookahead on its body (hf_, npm_); else it gets a scan of its own (dapi), which
# costs one more pass over clean text. Prefixes that end with "-" or "." and hold none of these bytes
# (pul-, dp.pt., hvs.) are not formats here: a pass for "-" or "." costs 15-20% of the redaction rate
# (measured: a stop at a byte that common costs ~50 ns), so they are left to the key = value rules.
RAW = (b"A", b"J", b"~")
LOW = (b"k", b"g", b"x")


def prefix_hook(prefix: bytes, gate: str) -> Hook:
    """The hook of a literal prefix."""
    for anchor in RAW:
        i = prefix.find(anchor)
        if i >= 0:
            rest = re.escape(prefix[i + 1 :])
            return Hook(anchor, ahead=rest + (b"(?<=" + re.escape(prefix) + b")" if i else b""), back=i,
                        sure=sure(prefix, i))
    low = prefix.lower()
    for anchor in LOW:
        i = low.find(anchor)
        if i >= 0:
            rest = re.escape(low[i + 1 :])
            behind = b"(?<=" + re.escape(low) + b")" if i else b""
            return Hook(anchor, ahead=rest + behind if rest else behind, back=i, low=True, sure=sure(low, i))
    if prefix.endswith(b"_"):
        return Hook(b"_", behind=prefix, back=len(prefix) - 1, gate=gate, sure=sure(prefix, len(prefix) - 1))
    return Hook(prefix[:1], ahead=re.escape(prefix[1:]), sure=sure(prefix, 0))


def token(kind: str, prefixes: tuple[bytes, ...], body: bytes, *, start: bytes = ALNUM,
          end: bytes | None = ALNUM, gate: str = "narrow", **options: object) -> Rule:
    """A prefixed format: ``start`` and ``end`` are the classes that may not touch it, ``gate`` tells the
    locator what its body begins with when a prefix ends on an anchor byte ("narrow": 16 alphanumerics;
    "wide": base64/base64url, which may hold ``-_+/`` early)."""
    alternatives = b"|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    pattern = starts(start) + b"(?:" + alternatives + b")" + body + (ends(end) if end else b"")
    hooks = tuple(prefix_hook(p, gate) for p in prefixes)
    return Rule(kind, re.compile(pattern), hooks=hooks, **options)  # type: ignore[arg-type]


def _after_sas_version(text: str, m: re.Match[bytes]) -> bool:
    # A SAS token's signature: its version (sv=2022-11-02) stands earlier in the same token or URL.
    line_start = m.string.rfind(b"\n", 0, m.start()) + 1
    return _SAS_VERSION.search(m.string, max(line_start, m.start() - 600), m.start()) is not None


_SAS_VERSION = re.compile(rb"(?<![A-Za-z0-9])sv=[0-9]{4}-[0-9]{2}-[0-9]{2}[^\s\"'<>]*\Z")


_HEX32 = rb"[0-9a-f]{32}"
_AC_HEX = Sure(rb"AC[0-9a-f]{32}", 0)  # "AC" alone is in every other word of code

TOKENS: tuple[Rule, ...] = (
    # JWT: base64url header "eyJ..." . payload "eyJ..." . signature (empty when unsigned). Found at the dot
    # before the payload, then back over the header.
    Rule("jwt", re.compile(starts(B64URL) + rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
         hooks=(Hook(b"J", ahead=rb"(?<=eyJ)", back=2, sure=sure(b"eyJ", 2)),), split=True),
    # --- AI model providers
    # Anthropic: sk-ant-api03-<93>AA, sk-ant-admin01-..., sk-ant-oat01-... (OAuth).
    token("anthropic-api-key", (b"sk-ant-",), rb"(?P<body>[A-Za-z0-9_-]{20,})", start=B64URL, end=None,
          check=_random_body),
    token("openrouter-api-key", (b"sk-or-v1-",), rb"[0-9a-f]{64}", start=B64URL),
    # OpenAI-style: sk-<48 base62> (legacy), sk-proj-, sk-svcacct-, sk-admin- (base64url bodies). Reported as
    # OpenAI although other providers copied the format.
    token("openai-api-key", (b"sk-proj-", b"sk-svcacct-", b"sk-admin-", b"sk-None-", b"sk-"),
          rb"(?P<body>[A-Za-z0-9_-]{20,})", start=B64URL, end=None, gate="wide", check=_random_body),
    token("groq-api-key", (b"gsk_",), rb"[A-Za-z0-9]{52}"),
    token("xai-api-key", (b"xai-",), rb"(?P<body>[A-Za-z0-9]{70,})", check=_random_body),
    token("perplexity-api-key", (b"pplx-",), rb"[A-Za-z0-9]{48}"),
    token("replicate-api-token", (b"r8_",), rb"[A-Za-z0-9]{37}"),
    token("huggingface-token", (b"hf_", b"api_org_"), rb"(?P<body>[A-Za-z0-9]{34})", start=WORD,
          check=_random_body),
    token("langsmith-api-key", (b"lsv2_pt_", b"lsv2_sk_"), rb"[0-9a-f]{32}_[0-9a-f]{10}"),
    token("pinecone-api-key", (b"pcsk_",), rb"[A-Za-z0-9]{5,6}_[A-Za-z0-9]{63}"),
    token("together-api-key", (b"tgp_v1_",), rb"[A-Za-z0-9_-]{43}", end=B64URL, gate="wide"),
    # --- clouds
    # AWS access key ids: AKIA (long-term), ASIA (temporary, STS), ABIA, ACCA + 16 base32.
    token("aws-access-key-id", (b"AKIA", b"ASIA", b"ABIA", b"ACCA"), rb"[A-Z0-9]{16}", split=True),
    token("aws-bedrock-api-key", (b"ABSK",), rb"[A-Za-z0-9+/]{109,269}={0,2}", end=rb"A-Za-z0-9+/="),
    # Google API keys (GCP, Firebase, Maps): AIza + 35 base64url; Gemini's AQ.Ab8RN6 + 44.
    token("google-api-key", (b"AIza",), rb"[A-Za-z0-9_-]{35}", start=B64URL, end=B64URL, split=True),
    token("google-api-key", (b"AQ.Ab8RN6",), rb"[A-Za-z0-9_-]{44}", start=B64URL, end=B64URL),
    # Azure: a storage account key (AccountKey= in a connection string, 88 base64), a Service Bus / Event Hubs
    # key (SharedAccessKey=), the signature of a SAS token (sig=, after its sv=YYYY-MM-DD version), an Entra
    # ID (AAD) client secret (3 chars, a digit, Q~, 31-34 more). The names stay readable.
    token("azure-storage-key", (b"AccountKey=",), rb"(?P<v>[A-Za-z0-9+/]{86}==)", group="v"),
    token("azure-shared-access-key", (b"SharedAccessKey=",), rb"(?P<v>[A-Za-z0-9+/]{40,88}={0,2})", group="v",
          end=rb"A-Za-z0-9+/="),
    Rule("azure-sas-signature", re.compile(rb"(?<=[?&;])sig=(?P<v>[A-Za-z0-9%+/=]{20,})"), group="v",
         hooks=(Hook(b"g", ahead=rb"=(?<=sig=)", back=2, low=True, sure=sure(b"sig=", 2)),),
         check=_after_sas_version),
    Rule("azure-ad-client-secret", re.compile(
        starts(rb"A-Za-z0-9_~.-") + rb"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"
        + ends(rb"A-Za-z0-9_~-") + rb"(?!\.[A-Za-z0-9_~.-])"),  # a final "." ends a sentence
         hooks=(Hook(b"~", ahead=rb"(?<=[0-9]Q~)", back=5, sure=sure(b"Q~", 1)),)),
    token("alibaba-access-key-id", (b"LTAI",), rb"[A-Za-z0-9]{17,21}"),
    token("digitalocean-token", (b"dop_v1_", b"doo_v1_", b"dor_v1_"), rb"[0-9a-f]{64}"),
    token("heroku-api-key", (b"HRKU-AA",), rb"[A-Za-z0-9_-]{58}", end=B64URL),
    # Fly.io: fm1a_/fm1r_/fm2_ macaroons (FlyV1 fm2_...,fm2_... as "fly tokens create" prints).
    token("flyio-token", (b"fm1a_", b"fm1r_", b"fm2_"),
          rb"[A-Za-z0-9+/]{100,}={0,3}(?:,fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})*", end=rb"A-Za-z0-9+/="),
    token("supabase-token", (b"sbp_",), rb"[0-9a-f]{40}"),
    token("databricks-token", (b"dapi",), _HEX32 + rb"(?:-[0-9])?"),
    token("neon-api-key", (b"napi_",), rb"[A-Za-z0-9]{64}"),
    token("render-api-key", (b"rnd_",), rb"[A-Za-z0-9]{28}"),
    token("tailscale-key", (b"tskey-api-", b"tskey-auth-", b"tskey-client-", b"tskey-webhook-"),
          rb"(?P<body>[A-Za-z0-9-]{30,})", check=_random_body),
    token("docker-hub-token", (b"dckr_pat_", b"dckr_oat_"), rb"[A-Za-z0-9_-]{27,32}", end=B64URL,
          gate="wide"),
    token("openshift-token", (b"sha256~",), rb"[A-Za-z0-9_-]{43}", end=B64URL),
    # --- code hosting, registries, developer tools
    # GitHub: ghp_ (classic PAT), gho_ (OAuth), ghu_ (user-to-server), ghs_ (app installation), ghr_
    # (refresh) + 36+ base62; github_pat_<22>_<59> (fine-grained PAT).
    token("github-token", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"), rb"[A-Za-z0-9]{36,}", start=WORD,
          end=WORD, split=True),
    token("github-token", (b"github_pat_",), rb"[A-Za-z0-9_]{50,}", start=WORD, end=WORD, split=True),
    # GitLab: glpat- (personal/project/group access, also routable: ...base64.01.xxxxxxxxx), gldt- (deploy),
    # glrt- (runner), glcbt- (CI job), glptt- (pipeline trigger), glft- (feed), glimt- (incoming mail),
    # glagent- (k8s agent), glsoat- (SCIM), gloas- (OAuth app secret), glffct- (feature flags), glddt-
    # (dependency proxy) + 20+ base64url; GR1348941 (runner registration).
    token("gitlab-token", (b"glpat-", b"gldt-", b"glrt-", b"glcbt-", b"glptt-", b"glft-", b"glimt-",
                           b"glagent-", b"glsoat-", b"gloas-", b"glffct-", b"glddt-"),
          rb"[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2}\.?[0-9a-z]{7,9}(?![A-Za-z0-9]))?", start=WORD, end=None,
          gate="wide"),
    token("gitlab-token", (b"GR1348941",), rb"[A-Za-z0-9_-]{20,}", start=WORD, end=None),
    token("npm-token", (b"npm_",), rb"[A-Za-z0-9]{36}", start=WORD),
    token("shopify-token", (b"shpat_", b"shpca_", b"shppa_", b"shpss_"), rb"[0-9a-fA-F]{32}"),
    # PyPI upload tokens are macaroons whose base64 starts with the issuer: pypi.org or test.pypi.org.
    token("pypi-token", (b"pypi-AgEIcHlwaS5vcmc", b"pypi-AgENdGVzdC5weXBpLm9yZw"), rb"[A-Za-z0-9_-]{50,}",
          end=B64URL),
    token("rubygems-token", (b"rubygems_",), rb"[0-9a-f]{48}"),
    token("clojars-token", (b"CLOJARS_",), rb"[A-Za-z0-9]{60}"),
    token("artifactory-api-key", (b"AKCp",), rb"[A-Za-z0-9]{68,70}"),
    token("atlassian-api-token", (b"ATATT3",), rb"[A-Za-z0-9_=-]{180,}", end=rb"A-Za-z0-9_=-"),
    token("linear-api-key", (b"lin_api_",), rb"[A-Za-z0-9]{40}"),
    token("postman-api-key", (b"PMAK-",), rb"[0-9a-f]{24}-[0-9a-f]{34}"),
    token("sentry-token", (b"sntrys_eyJ",), rb"[A-Za-z0-9+/=_]{60,}", end=rb"A-Za-z0-9+/=_"),
    token("sentry-token", (b"sntryu_",), rb"[0-9a-f]{64}"),
    token("grafana-token", (b"glc_",), rb"[A-Za-z0-9+/]{32,400}={0,2}", end=rb"A-Za-z0-9+/=", gate="wide"),
    token("grafana-token", (b"glsa_",), rb"[A-Za-z0-9]{32}_[0-9a-fA-F]{8}"),
    token("newrelic-key", (b"NRAK-",), rb"[A-Z0-9]{27}"),
    token("sourcegraph-token", (b"sgp_",), rb"(?:[0-9a-f]{16}_|local_)?[0-9a-f]{40}"),
    token("readme-api-key", (b"rdme_",), rb"[a-z0-9]{70}"),
    token("prefect-api-key", (b"pnu_",), rb"[A-Za-z0-9]{36}"),
    token("scalingo-token", (b"tk-us-",), rb"[A-Za-z0-9_-]{48}", end=B64URL, gate="wide"),
    token("octopus-deploy-api-key", (b"API-",), rb"(?P<body>[A-Z0-9]{26})", check=_random_body),
    token("figma-token", (b"figd_",), rb"[A-Za-z0-9_-]{38,42}", end=B64URL, gate="wide"),
    token("notion-token", (b"ntn_",), rb"[0-9]{11}[A-Za-z0-9]{35}"),
    token("easypost-api-key", (b"EZAK",), rb"[A-Za-z0-9]{54}"),
    token("onepassword-token", (b"ops_eyJ",), rb"[A-Za-z0-9+/]{250,}={0,3}", end=rb"A-Za-z0-9+/="),
    token("onepassword-secret-key", (b"A3-",),
          rb"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),
    token("shippo-token", (b"shippo_live_", b"shippo_test_"), rb"[0-9a-fA-F]{40}"),
    token("settlemint-token", (b"sm_pat_", b"sm_aat_", b"sm_sat_"), rb"[A-Za-z0-9]{16}"),
    token("age-secret-key", (b"AGE-SECRET-KEY-1",), rb"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # --- chat, mail, messaging
    # Slack: xoxb- (bot), xoxp- (user), xoxa-/xoxr- (app/refresh), xoxs-, xoxo-, xoxc-/xoxd- (session),
    # xoxe.xoxp-/xoxe- (rotating), xapp- (app-level); bodies are dash-separated numbers and base62.
    token("slack-token", (*(b"xox" + c + s for c in (b"a", b"b", b"p", b"o", b"s", b"r", b"e", b"c", b"d")
                            for s in (b"-", b".")), b"xapp-"),
          rb"(?P<body>[A-Za-z0-9.-]{9,}[A-Za-z0-9])", start=WORD, end=None, gate="wide", check=_random_body),
    # Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../<24>; the host stays readable.
    Rule("slack-webhook", re.compile(
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{20,})"), group="v",
         hooks=(Hook(b"k", ahead=rb"s\.slack\.com/(?<=hooks\.slack\.com/)", back=3, low=True,
                     sure=sure(b"hooks.slack.com/", 3)),)),
    Rule("teams-webhook", re.compile(rb"\.webhook\.office\.com/webhookb2/(?P<v>[A-Za-z0-9@/-]{60,})"),
         group="v",
         hooks=(Hook(b"k", ahead=rb"\.office\.com/webhookb2/(?<=\.webhook\.office\.com/webhookb2/)", back=7,
                     low=True, sure=sure(b".webhook.office.com/webhookb2/", 7)),)),
    # Discord bot tokens: base64 of the bot's user id . 6 (time) . 27-38 (HMAC). Found at the first dot.
    # Telegram bot tokens: <bot id>:<35 base64url, from "AA">. The whole token goes.
    Rule("telegram-bot-token", re.compile(rb"(?<![0-9])[0-9]{5,16}:A[A-Za-z0-9_-]{34}" + ends(B64URL)),
         hooks=(Hook(b"A", ahead=rb"(?<=[0-9]:A)", back=1, walk=b"0123456789", sure=sure(b":A", 1)),)),
    # SendGrid: SG.<22>.<43>; Brevo (Sendinblue): xkeysib-<64 hex>-<16>; MailerSend: mlsn.<...>.
    token("sendgrid-api-key", (b"SG.",), rb"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", end=B64URL, gate="wide"),
    token("brevo-api-key", (b"xkeysib-",), rb"[0-9a-f]{64}-[A-Za-z0-9]{16}"),
    # Mailchimp: <32 hex>-us<datacenter>; Mailgun: key-<32 hex>.
    token("mailgun-api-key", (b"key-",), _HEX32),
    # Twilio: an account SID (AC + 32 hex) and the auth token paired with it (32 hex, shortly after: curl -u
    # AC...:token, Client("AC...", "token"), the next line of an .env); API key SIDs (SK + 32 hex).
    Rule("twilio-auth-token", re.compile(
        starts(ALNUM) + rb"AC" + _HEX32 + rb"(?![A-Za-z0-9])(?:(?!AC" + _HEX32 + rb")[\s\S]){1,160}?"
        + starts(ALNUM) + rb"(?P<v>" + _HEX32 + rb")" + ends(ALNUM)), group="v",
         hooks=(Hook(b"A", ahead=rb"C[0-9a-f]{32}", sure=_AC_HEX),)),
    Rule("twilio-account-sid", re.compile(starts(ALNUM) + rb"AC" + _HEX32 + ends(ALNUM)),
         hooks=(Hook(b"A", ahead=rb"C[0-9a-f]{32}", sure=_AC_HEX),)),  # the same alternative as the pair's: both are tried
    Rule("twilio-api-key", re.compile(starts(ALNUM) + rb"SK[0-9a-fA-F]{32}" + ends(ALNUM)),
         hooks=(Hook(b"k", ahead=rb"[0-9a-f]{32}(?<=sk[0-9a-f]{32})", back=1, low=True,
                     sure=Sure(rb"sk[0-9a-f]{32}", 1)),)),
    # --- payments
    # Stripe: sk_live_/sk_test_ (secret), rk_live_/rk_test_ (restricted) + 16+ base62 (see Decisions).
    token("stripe-key", (b"sk_live_", b"sk_test_", b"rk_live_", b"rk_test_"), rb"(?P<body>[A-Za-z0-9]{16,})",
          start=WORD, end=None, check=_random_body, split=True),
    # Square: sq0atp- (access), sq0csp- (OAuth secret), EAAA (access); Facebook/Meta: EAAB/EAAC/EAAG/EAAM.
    token("square-token", (b"EAAA",), rb"[A-Za-z0-9_-]{60}", end=B64URL),
    token("facebook-access-token", (b"EAAB", b"EAAC", b"EAAG", b"EAAM"), rb"[A-Za-z0-9]{100,}"),
)
