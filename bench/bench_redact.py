"""Throughput of ``harvester.redact.redact`` on realistic transcript text.

Run: ``python bench/bench_redact.py [--mb 50] [--seed 7] [--reps 3]``

The corpus is what a transcript bank is made of: tool output that is source code (the Python
standard library's own files, read as an agent's Read tool shows them, plus TypeScript/Go/shell
snippets), logs (pytest, pip, git, npm, docker, HTTP access logs, ``env``), JSON (API responses,
package-lock entries, transcript records) and assistant prose with non-ASCII punctuation. It is
cut into events of realistic sizes (a few hundred bytes to 64 KB) because ``redact`` is called
once per event, so per-call overhead counts as it does in the real import.

It contains on purpose the near misses a redactor meets all day (``token = get_token()``,
``max_tokens``, ``Authorization: Bearer ${TOKEN}``, sha512 integrity strings, commit hashes,
UUIDs, URLs, utility CSS classes and base64 images), so the "clean" figure is not just the cost of
a prefilter that never fires.

The dirty variant plants one secret (of every supported kind in turn, in a realistic context)
per ~10 KB, provider formats in places that name no key, and a key wrapped across an escaped newline. Each figure is printed beside the throughput of ``str.count("\\n")`` over the same
events in the same run: the ratio is what to compare across machines and runs.
"""

from __future__ import annotations

import argparse
import base64
import random
import string
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harvester.redact import engine, redact

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _hex(rng: random.Random, n: int) -> str:
    return _rand(rng, "0123456789abcdef", n)


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# --- clean text generators ---------------------------------------------------------------------------


def _stdlib_files() -> list[Path]:
    # Real code beats templates: the standard library is on every machine that runs this bench.
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in sorted(root.glob("*.py")) if p.stat().st_size > 2000]
    files += sorted((root / "json").glob("*.py")) + sorted((root / "http").glob("*.py"))
    files += sorted((root / "email").glob("*.py")) + sorted((root / "urllib").glob("*.py"))
    return files


_CODE_CACHE: list[str] = []


def code_read_output(rng: random.Random) -> str:
    """A Read-tool view of a slice of a real source file, with its line-number gutter."""
    if not _CODE_CACHE:
        for p in _stdlib_files():
            try:
                _CODE_CACHE.append(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
        if not _CODE_CACHE:
            _CODE_CACHE.append(TS_SNIPPET * 50)
    src = rng.choice(_CODE_CACHE).splitlines()
    start = rng.randrange(max(1, len(src) - 50))
    n = rng.choice((40, 80, 150, 300, 600))
    return "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(src[start : start + n], start)) + "\n"


TS_SNIPPET = """\
import { getToken, refreshToken } from "./auth";

export async function fetchRepos(org: string, page = 1): Promise<Repo[]> {
  const token = await getToken();
  const res = await fetch(`https://api.github.com/orgs/${org}/repos?page=${page}&per_page=100`, {
    headers: { Authorization: `Bearer ${token}`, Accept: "application/vnd.github+json" },
  });
  if (res.status === 401) {
    await refreshToken();
    return fetchRepos(org, page);
  }
  const maxTokens = config.maxTokens ?? 4096;
  return (await res.json()) as Repo[];
}

export function passwordStrength(password: string): number {
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((re) => re.test(password));
  return Math.min(4, classes.length + (password.length >= 12 ? 1 : 0));
}
"""

GO_SNIPPET = """\
func (c *Client) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
\ttoken, err := c.tokens.Token(ctx)
\tif err != nil {
\t\treturn nil, fmt.Errorf("get token: %w", err)
\t}
\treq.Header.Set("Authorization", "Bearer "+token.AccessToken)
\tsecret := os.Getenv("CLIENT_SECRET")
\tif secret == "" {
\t\treturn nil, errors.New("CLIENT_SECRET is not set")
\t}
\treturn c.http.Do(req.WithContext(ctx))
}
"""

SH_SNIPPET = """\
#!/usr/bin/env bash
set -euo pipefail
: "${GITHUB_TOKEN:?set GITHUB_TOKEN first}"
curl -fsSL -H "Authorization: Bearer ${GITHUB_TOKEN}" \\
  "https://api.github.com/repos/$OWNER/$REPO/releases/latest" | jq -r .tag_name
docker login -u "$REGISTRY_USER" --password-stdin <<<"$REGISTRY_PASSWORD"
psql "postgres://app:${DB_PASSWORD}@db.internal:5432/app" -c 'select 1'
"""


def code_snippet(rng: random.Random) -> str:
    return rng.choice((TS_SNIPPET, GO_SNIPPET, SH_SNIPPET)) * rng.randint(1, 4)


def pytest_log(rng: random.Random) -> str:
    mods = ["test_model", "test_ingest", "test_bank", "test_cursor", "test_cli", "test_tokenizer"]
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0",
             "rootdir: /home/dev/src/harvester", "configfile: pyproject.toml", "plugins: anyio-4.6.0",
             f"collected {rng.randint(50, 900)} items", ""]
    for _ in range(rng.randint(20, 200)):
        m = rng.choice(mods)
        lines.append(f"tests/{m}.py::test_{_rand(rng, string.ascii_lowercase + '_', 14)} "
                     f"{rng.choice(['PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'])} "
                     f"[{rng.randint(0, 100):>3}%]")
    lines += ["", "=================================== FAILURES ===================================",
              "____________________________ test_refresh_token_expiry ____________________________", "",
              "    def test_refresh_token_expiry(client):",
              "        token = client.refresh_token(max_age=3600)",
              ">       assert token.expires_in == 3600",
              "E       AssertionError: assert 3599 == 3600",
              "E        +  where 3599 = Token(value='<redacted>', expires_in=3599).expires_in", "",
              "tests/test_auth.py:42: AssertionError",
              f"========= 1 failed, {rng.randint(40, 800)} passed, 3 skipped in "
              f"{rng.uniform(1, 90):.2f}s ========="]
    return "\n".join(lines) + "\n"


def pip_log(rng: random.Random) -> str:
    pkgs = ["requests", "urllib3", "idna", "certifi", "charset-normalizer", "orjson", "click", "structlog",
            "zstandard", "psutil", "watchdog", "platformdirs", "GitPython", "gitdb", "smmap", "tokenizers"]
    out = []
    for p in rng.sample(pkgs, rng.randint(4, len(pkgs))):
        v = f"{rng.randint(0, 5)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}"
        out.append(f"Collecting {p}>={v} (from -r requirements.txt (line {rng.randint(1, 30)}))")
        out.append(f"  Downloading https://files.pythonhosted.org/packages/{_hex(rng, 2)}/{_hex(rng, 2)}/"
                   f"{_hex(rng, 60)}/{p.lower()}-{v}-py3-none-any.whl ({rng.randint(10, 900)} kB)")
        out.append("     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 62.6/62.6 kB 4.1 MB/s eta 0:00:00")
    out.append("Installing collected packages: " + ", ".join(pkgs))
    out.append("Successfully installed " + " ".join(f"{p}-1.{i}.0" for i, p in enumerate(pkgs)))
    return "\n".join(out) + "\n"


def git_log(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(5, 40)):
        subject = rng.choice(["token refresh", "password reset flow", "cursor resume", "secret loading"])
        out += [f"commit {_hex(rng, 40)}", "Author: Dev Eloper <dev@example.com>",
                f"Date:   Mon Oct {rng.randint(1, 28)} 1{rng.randint(0, 9)}:{rng.randint(10, 59)}:11 2024",
                "", f"    {rng.choice(['Fix', 'Add', 'Refactor', 'Drop'])} {subject}", ""]
    out += ["diff --git a/src/auth.py b/src/auth.py", f"index {_hex(rng, 7)}..{_hex(rng, 7)} 100644",
            "--- a/src/auth.py", "+++ b/src/auth.py", "@@ -10,7 +10,7 @@ def login(session, user):",
            "-    password = request.form['password']", "+    password = request.form.get('password', '')",
            "     token = issue_token(user, scopes=SCOPES)",
            "     return {'access_token': token, 'token_type': 'bearer'}"]
    return "\n".join(out) + "\n"


def access_log(rng: random.Random) -> str:
    paths = ["/api/v1/items", "/api/v1/users/me", "/oauth/token", "/login", "/static/app.js", "/healthz"]
    out = []
    for _ in range(rng.randint(20, 300)):
        when = f"10/Oct/2024:13:{rng.randint(10, 59)}:{rng.randint(10, 59)} +0000"
        request = (f"{rng.choice(['GET', 'POST'])} {rng.choice(paths)}?page={rng.randint(1, 9)}&per_page=50"
                   f"&request_id={_uuid(rng)} HTTP/1.1")
        out.append(f'10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)} - - [{when}] "{request}" '
                   f'{rng.choice([200, 200, 304, 401])} {rng.randint(100, 90000)} "https://app.example.com/" '
                   f'"Mozilla/5.0 (X11; Linux x86_64)"')
    return "\n".join(out) + "\n"


def build_log(rng: random.Random) -> str:
    out = []
    for i in range(rng.randint(10, 60)):
        n = rng.randint(100, 1500)
        out.append(rng.choice([
            f"#{i} [{rng.randint(1, 9)}/9] RUN apt-get update && apt-get install -y --no-install-recommends",
            f"#{i} sha256:{_hex(rng, 64)} {rng.randint(1, 90)}.{rng.randint(0, 9)}MB / 120MB 0.{i}s",
            "npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.",
            f"added {n} packages, and audited {n + 1} packages in {rng.randint(2, 60)}s",
            f"src/main.rs:{rng.randint(1, 400)}:{rng.randint(1, 80)}: error[E0308]: mismatched types",
            f"   --> src/token.rs:{rng.randint(1, 400)}:9 | let token: Token = lexer.next_token()?;",
            f"-rw-r--r--  1 dev dev {rng.randint(100, 99999):>6} Oct {rng.randint(1, 28):>2} "
            f"12:{rng.randint(10, 59)} {rng.choice(['README.md', 'pyproject.toml', 'secrets.example.env'])}",
        ]))
    return "\n".join(out) + "\n"


def env_dump(rng: random.Random) -> str:
    return "\n".join([
        "SHELL=/bin/bash", "COLORTERM=truecolor", "HISTCONTROL=ignoreboth", "LANG=en_US.UTF-8",
        "PWD=/home/dev/src/harvester", "HOME=/home/dev", "TERM=xterm-256color", "USER=dev", "SHLVL=2",
        f"SSH_AUTH_SOCK=/tmp/ssh-{_rand(rng, ALNUM, 10)}/agent.{rng.randint(1000, 9999)}",
        "XDG_RUNTIME_DIR=/run/user/1000", "LESSCLOSE=/usr/bin/lesspipe %s %s",
        "PATH=/home/dev/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "GIT_ASKPASS=/usr/share/code/resources/app/extensions/git/dist/askpass.sh",
        "VSCODE_GIT_ASKPASS_MAIN=/usr/share/code/resources/app/extensions/git/dist/askpass-main.js",
        "OLDPWD=/home/dev", "_=/usr/bin/env", "EDITOR=vim", "PYTHONDONTWRITEBYTECODE=1",
    ]) + "\n"


def api_json(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(2, 30)):
        n = rng.randint(1000, 999999)
        node_id = base64.b64encode(f"010:Repository{n}".encode()).decode()
        items.append(
            f'  {{\n    "id": {n},\n    "node_id": "{node_id}",\n'
            f'    "name": "repo-{n}",\n    "full_name": "octo-org/repo-{n}",\n    "private": false,\n'
            f'    "html_url": "https://github.com/octo-org/repo-{n}",\n'
            f'    "url": "https://api.github.com/repos/octo-org/repo-{n}",\n'
            f'    "git_url": "git://github.com/octo-org/repo-{n}.git",\n'
            f'    "ssh_url": "git@github.com:octo-org/repo-{n}.git",\n'
            f'    "default_branch": "main",\n    "pushed_at": "2024-10-0{rng.randint(1, 9)}T12:00:00Z",\n'
            f'    "head_sha": "{_hex(rng, 40)}",\n    "permissions": {{"admin": false, "push": true}}\n  }}')
    return "[\n" + ",\n".join(items) + "\n]\n"


def lock_json(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(10, 80)):
        name = _rand(rng, string.ascii_lowercase, rng.randint(3, 12))
        digest = base64.b64encode(rng.randbytes(64)).decode()
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 20)}.0"
        out.append(f'    "node_modules/{name}": {{\n      "version": "{version}",\n'
                   f'      "resolved": "https://registry.npmjs.org/{name}/-/{name}-1.0.0.tgz",\n'
                   f'      "integrity": "sha512-{digest}",\n      "dev": true\n    }}')
    return '{\n  "packages": {\n' + ",\n".join(out) + "\n  }\n}\n"


def transcript_jsonl(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(3, 30)):
        out.append(
            f'{{"parentUuid":"{_uuid(rng)}","isSidechain":false,"userType":"external","cwd":"/home/dev/src/app",'
            f'"sessionId":"{_uuid(rng)}","version":"2.0.14","gitBranch":"main","type":"assistant",'
            f'"message":{{"id":"msg_01{_rand(rng, ALNUM, 22)}","type":"message","role":"assistant",'
            f'"model":"claude-sonnet-4-5","content":[{{"type":"tool_use",'
            f'"id":"toolu_01{_rand(rng, ALNUM, 22)}",'
            f'"name":"Bash","input":{{"command":"pytest -q tests/test_tokens.py -k refresh_token",'
            f'"description":"Run the token tests"}}}}],"usage":{{"input_tokens":{rng.randint(1, 9000)},'
            f'"cache_read_input_tokens":{rng.randint(0, 90000)},"output_tokens":{rng.randint(1, 900)}}}}},'
            f'"uuid":"{_uuid(rng)}","timestamp":"2024-10-10T12:{rng.randint(10, 59)}:00.000Z"}}')
    return "\n".join(out) + "\n"


def prose(rng: random.Random) -> str:
    paras = [
        "I’ll start by reading the ingest module — it decides when a cursor moves — and then run the tests.",
        "The failure comes from `refresh_token()`: it compares the expiry with `>=` where it should use `>`. "
        "I’ve fixed that and added a regression test ✓.",
        "## Plan\n\n1. Parse the rollout files → normalized events\n2. Store them in the bank\n"
        "3. Make `status` report problems (malformed records, unknown types)…",
        "Don’t put the password in the config file; read it from the keyring instead. The token is "
        "refreshed automatically when it expires, so nothing else needs to change.",
    ]
    return "\n\n".join(rng.choice(paras) for _ in range(rng.randint(2, 12))) + "\n"


def html_page(rng: random.Random) -> str:
    """A component an agent wrote or read: utility CSS classes, an inline base64 image, a digest."""
    image = base64.b64encode(rng.randbytes(rng.randint(300, 3000))).decode()
    rows = "\n".join(
        f'      <li class="flex items-center justify-between px-4 py-2 hover:bg-gray-50 sm:px-6" key="{_uuid(rng)}">'
        f'<span class="truncate text-sm font-medium text-gray-900">item {i}</span></li>'
        for i in range(rng.randint(5, 40)))
    return (f'<div class="mx-auto max-w-7xl px-4 sm:px-6 lg:px-8">\n  <img alt="logo" class="h-8 w-auto" '
            f'src="data:image/png;base64,{image}">\n  <ul role="list" class="divide-y divide-gray-100">\n{rows}\n'
            f'  </ul>\n  <script src="/static/app.{_hex(rng, 20)}.js" integrity="sha384-'
            f'{base64.b64encode(rng.randbytes(48)).decode()}"></script>\n</div>\n')


GENERATORS: list[tuple[Callable[[random.Random], str], int]] = [
    (code_read_output, 30), (code_snippet, 6), (pytest_log, 8), (pip_log, 5), (git_log, 6), (access_log, 6),
    (build_log, 5), (env_dump, 2), (api_json, 8), (lock_json, 6), (transcript_jsonl, 8), (prose, 10),
    (html_page, 3),
]


def clean_events(total: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    gens = [g for g, _ in GENERATORS]
    weights = [w for _, w in GENERATORS]
    events: list[str] = []
    size = 0
    while size < total:
        # Tool results are often several outputs back to back; events range from ~100 B to 64 KB.
        text = "".join(g(rng) for g in rng.choices(gens, weights, k=rng.choice((1, 1, 1, 2, 4))))[:65536]
        events.append(text)
        size += len(text)
    return events


# --- planted secrets ----------------------------------------------------------------------------------


def _pem(rng: random.Random) -> str:
    body = base64.b64encode(rng.randbytes(600)).decode()
    return "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *(body[i : i + 64] for i in range(0, len(body), 64)),
                      "-----END RSA PRIVATE KEY-----"])


SECRETS: list[Callable[[random.Random], str]] = [
    lambda r: f"export AWS_ACCESS_KEY_ID=AKIA{_rand(r, string.ascii_uppercase + '234567', 16)}",
    lambda r: f"aws_secret_access_key = {_rand(r, ALNUM + '/+', 40)}",
    lambda r: f'  "api_key": "AIza{_rand(r, B64URL, 35)}",',
    lambda r: f"git clone https://x-access-token:ghp_{_rand(r, ALNUM, 36)}@github.com/octo/app.git",
    lambda r: f"GITLAB_TOKEN=glpat-{_rand(r, B64URL, 20)}",
    lambda r: f"SLACK_BOT_TOKEN=xoxb-{r.randint(10**11, 10**12)}-{r.randint(10**11, 10**12)}-"
              f"{_rand(r, ALNUM, 24)}",
    lambda r: f"curl -X POST https://hooks.slack.com/services/T{_rand(r, ALNUM, 8)}/B{_rand(r, ALNUM, 8)}/"
              f"{_rand(r, ALNUM, 24)} -d @msg.json",
    lambda r: f"stripe.api_key = 'sk_live_{_rand(r, ALNUM, 24)}'",
    lambda r: f"OPENAI_API_KEY=sk-proj-{_rand(r, B64URL, 64)}",
    lambda r: f'client = Anthropic(api_key="sk-ant-api03-{_rand(r, B64URL, 93)}AA")',
    lambda r: f"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJ{_rand(r, B64URL, 40)}.{_rand(r, B64URL, 43)}",
    _pem,
    lambda r: f"DATABASE_URL=postgres://app:{_rand(r, ALNUM, 20)}@db.internal:5432/app",
    lambda r: f"mysql -u root --password={_rand(r, ALNUM + '!#%', 14)} app",
    lambda r: f"client_secret: {_rand(r, ALNUM, 32)}",
    lambda r: f"curl -H 'Authorization: Basic {base64.b64encode(rng_pair(r)).decode()}' https://ci.example.com",
    # Provider formats (issue 9): prose, JSON output and commands that name no key.
    lambda r: (f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=app;"
               f"AccountKey={base64.b64encode(r.randbytes(64)).decode()};EndpointSuffix=core.windows.net"),
    lambda r: f"client = Client('AC{_hex(r, 32)}', '{_hex(r, 32)}')",
    lambda r: f"I logged in to the hub with hf_{_rand(r, ALNUM, 34)} and pushed the model.",
    lambda r: f'{{"token": "npm_{_rand(r, ALNUM, 36)}", "readonly": false}}',
    lambda r: f"sg.send(key='SG.{_rand(r, B64URL, 22)}.{_rand(r, B64URL, 43)}')",
    lambda r: f"databricks fs ls dbfs:/ --profile prod  # dapi{_hex(r, 32)}",
    lambda r: f'{{"stdout": "creds:\\nAKIA{_rand(r, string.ascii_uppercase + "234567", 8)}\\n'
              f'{_rand(r, string.ascii_uppercase + "234567", 8)}\\ndone"}}',  # a key wrapped in JSON output
    lambda r: f"export SHOPIFY_ADMIN=shpat_{_hex(r, 32)} LINEAR=lin_api_{_rand(r, ALNUM, 40)}",
]


def rng_pair(r: random.Random) -> bytes:
    return f"deploy:{_rand(r, ALNUM, 18)}".encode()


def dirty_events(clean: list[str], seed: int, every: int = 10_000) -> list[str]:
    rng = random.Random(seed + 1)
    out = []
    budget = rng.randint(0, every)
    k = 0
    for text in clean:
        if len(text) < budget:
            budget -= len(text)
            out.append(text)
            continue
        parts = []
        pos = 0
        while pos + budget <= len(text):
            cut = text.find("\n", pos + budget)
            if cut < 0:
                break
            parts.append(text[pos : cut + 1])
            parts.append(SECRETS[k % len(SECRETS)](rng) + "\n")
            k += 1
            pos = cut + 1
            budget = every
        parts.append(text[pos:])
        budget = max(0, budget - (len(text) - pos))
        out.append("".join(parts))
    return out


# --- measuring ----------------------------------------------------------------------------------------


def measure(events: list[str], reps: int) -> tuple[float, float, float, Counter[str]]:
    """MB/s of redact, of redact with every scan over the whole text (what it was before issue 29: no Hyperscan
    pass placing them, ``harvester/redact/positions.py``) and of the reference pass over the same events, and the
    kinds found (the same both ways: checked). CPU time: the machine this runs on is shared."""
    size = sum(len(e) for e in events) / 1e6
    placed = engine._POSITIONS

    def run_redact() -> None:
        for e in events:
            redact(e)

    def run_whole() -> None:
        engine._POSITIONS = None
        try:
            for e in events:
                redact(e)
        finally:
            engine._POSITIONS = placed

    def run_reference() -> None:
        for e in events:
            e.count("\n")

    kinds: Counter[str] = Counter()
    for e in events:
        out = redact(e)
        engine._POSITIONS = None
        try:
            assert out == redact(e), "placing the scans changed the output"
        finally:
            engine._POSITIONS = placed
        kinds.update(out[1])
    # Interleave the three so all see the same machine load; keep the best of each.
    best = [float("inf")] * 3
    for _ in range(reps):
        for n, fn in enumerate((run_reference, run_whole, run_redact)):
            t0 = time.process_time()
            fn()
            best[n] = min(best[n], time.process_time() - t0)
    return size / best[2], size / best[1], size / best[0], kinds


def _line(label: str, red: float, whole: float, ref: float) -> str:
    return (f"{label}: redact {red:6.1f} MB/s (scans over the whole text {whole:6.1f}, x{red / whole:.2f})"
            f" | str.count('\\n') {ref:6.0f} MB/s | ratio {red / ref:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50.0, help="corpus size in MB (default 50)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3, help="best of N passes (default 3)")
    args = ap.parse_args()

    clean = clean_events(int(args.mb * 1e6), args.seed)
    dirty = dirty_events(clean, args.seed)
    ascii_share = sum(len(e) for e in clean if e.isascii()) / sum(len(e) for e in clean)
    print(f"corpus: {len(clean)} events, {sum(map(len, clean)) / 1e6:.1f} MB clean "
          f"({ascii_share:.0%} in ASCII-only events), {sum(map(len, dirty)) / 1e6:.1f} MB dirty "
          f"(a secret per ~10 KB)")
    for label, events in (("clean", clean), ("dirty", dirty)):
        red, whole, ref, kinds = measure(events, args.reps)
        print(_line(label, red, whole, ref) + f" | {sum(kinds.values())} redactions")
        if kinds:
            print("       " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    # Per-call overhead shows on small events: the clean text again, cut to one size.
    blob = "".join(clean)[:10_000_000]
    for size in (1_000, 4_000, 64_000):
        red, whole, ref, _ = measure([blob[i : i + size] for i in range(0, len(blob), size)], args.reps)
        print(_line(f"clean in {size // 1000:>2} KB events", red, whole, ref))


if __name__ == "__main__":
    main()
