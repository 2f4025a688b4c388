"""harvester.redact, issue 23: credentials known by the command, file or URL they stand in.

Command-line passwords (``curl -u``, ``sshpass -p``, ``mysql -pPW``, ``docker login -p``...), ``.netrc``
lines, Docker's ``auths.*.auth``, kubeconfig keys, Laravel's ``APP_KEY=base64:``, ``.env`` lines after a
literal ``\\n``, signed-URL query parameters, tokens used as a URL's user name, and secrets that a real line
break cut in two. Each class has its look-alikes that must stay. As in tests/test_redact.py, every secret is
fake and built at run time by concatenation, so that no literal token sits in the repository.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from harvester.redact import redact, redact_value

RNG = random.Random(2323)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
PW = "Qz7" + "".join(RNG.choices(ALNUM, k=9)) + "!x"  # a password with punctuation
WORD_PW = "hunter" + "22"


def rand(alphabet: str, n: int) -> str:
    while True:
        s = "".join(RNG.choices(alphabet, k=n))
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            return s


def only(text: str, secret: str, kind: str = "password", n: int = 1) -> str:
    """``text`` redacted: exactly ``secret`` replaced by its marker, and nothing else changed."""
    out, counts = redact(text)
    assert secret not in out, out
    assert out == text.replace(secret, f"[REDACTED:{kind}]"), out
    assert counts == {kind: n}, counts
    return out


def kept(text: str) -> None:
    out, counts = redact(text)
    assert counts == {} and out is text, out


# --- passwords on a command line ---------------------------------------------------------------------------

COMMAND_PASSWORDS = [
    # curl: -u/--user/-U/--proxy-user user:password; only the password goes.
    ("curl -u admin:{p} https://api.example.com/v1/jobs", PW),
    ("curl --cacert ca.crt -u elastic:{p} https://localhost:9200", PW),
    ("curl -sS --user 'johns:{p}' https://api.example.com", PW),
    ('curl -s -v --user "j.smith:{p}" "https://api.example.com/user/me"', PW),
    ("curl --user=deploy:{p} -X POST https://ci.example.com/hook", PW),
    ("curl --user kevin:'{p}' -iX PATCH https://api.example.com", PW),
    ("curl -x http://proxy:3128 -U proxyuser:{p} https://example.com", PW),
    ("curl -k -X POST https://example.com/rest \\\n  -H 'Content-type: text/plain' \\\n  -u developer:{p}", PW),
    ('{{"command": "curl -u admin:{p} https://api.example.com | jq ."}}', PW),
    ("$ http -a dev:{p} POST https://api.example.com/items", PW),  # HTTPie
    # sshpass: -p PASSWORD or -pPASSWORD, before the command it runs.
    ("sshpass -p '{p}' ssh dev@build.example.com uptime", PW),
    ("sshpass -p {p} scp app.tar.gz dev@host:/srv/", PW),
    ("sshpass -p{p} rsync -a dist/ dev@host:/srv/", PW),
    ("sshpass -p {p} ssh -p 2222 dev@host", PW),  # ssh's -p 2222 is a port and stays
    # mysql and its tools: -pPASSWORD, attached (a blank after -p means: prompt, then a database name).
    ("mysql -u root -p{p} app", PW),
    ("mysqldump -uroot -p'{p}' --all-databases > all.sql", PW),
    ("docker exec -it db mysql -uroot -p{p} -e 'show databases'", PW),
    ("mariadb -h db -u app -p{p} app < schema.sql", PW),
    ("mysql -u root -p{w} app", WORD_PW),
    # registries: docker/podman/oc login -p PASSWORD
    ("docker login -u dev -p {p} registry.example.com", PW),
    ("podman login registry.example.com -u dev -p {p}", PW),
    ("oc login https://api.cluster.example.com:6443 -u developer -p {p}", PW),
    # redis-cli -a, mongosh -p, ldap* -w, sqlcmd -P, openssl pass:, keytool -storepass
    ("redis-cli -h cache -p 6379 -a {p} ping", PW),
    ("mongosh mongodb://db:27017/app -u admin -p {p} --authenticationDatabase admin", PW),
    ("ldapsearch -x -H ldap://ldap -D cn=admin,dc=example,dc=org -w {p} -b dc=example,dc=org", PW),
    ("sqlcmd -S db,1433 -U sa -P {p} -Q 'SELECT 1'", PW),
    ("openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout pass:{p}", PW),
    ("keytool -importcert -file ca.crt -keystore trust.jks -storepass {p} -noprompt", PW),
]


@pytest.mark.parametrize(("template", "secret"), COMMAND_PASSWORDS, ids=[t[:36] for t, _ in COMMAND_PASSWORDS])
def test_a_password_on_a_command_line_goes(template: str, secret: str) -> None:
    only(template.format(p=PW, w=WORD_PW), secret)


def test_curl_user_that_is_a_key_goes_when_the_password_is_empty() -> None:
    # -u "key:" (an API key as the user name, an empty password): the user part is the secret.
    key = rand(ALNUM, 14) + "!t"
    only(f'curl -u "{key}:" https://localhost:9200', key)
    only(f'curl -u ":{key}" https://localhost:9200', key)


COMMAND_LOOK_ALIKES = [
    "curl -u admin https://api.example.com",  # no password: curl prompts
    'curl -u "myusername" http://localhost:15130/api/check_user/',
    "curl -u ':' https://localhost:9200",
    "curl -u user:pass --digest http://127.0.0.1:5000/file",
    "curl --user \"username:password\" https://example.com",
    "curl -u <user:password> https://test.com/endpoint",
    "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/",
    'curl -sL --user "$1:$2" "$3" > "$4"',
    'curl -u "${_username}:${_password}"',
    "curl -X POST --user \"$(cat ./login.txt):$(cat ./password.txt)\"",
    'curl -XGET -i -u "${{ env.ELK_ID }}:${{ build.env.ELK_PASS }}"',
    "curl --user \"xxx:yyy\"",
    "curl --silent --insecure --user ${f5user}:${f5pass} \\",
    "docker run -u 1000:1000 -p 8080:80 nginx",
    "sudo -u postgres psql -p 5432 -U app",
    "docker exec -u root:root app ls",
    "nc -u -l 41234",
    "mysql -u root -p app",
    "mysql -h db -P3306 -u app -p",
    "mysql -p -e 'select 1'",
    'mysql -uroot -p"$MYSQL_ROOT_PASSWORD" app',
    "mysql -uroot -p${MYSQL_ROOT_PASSWORD} app",
    "ssh -p2222 dev@host",
    "psql -p5432 -U app",
    "mkdir -p build && cp -p a b",
    "find . -name '*.pyc' -print -prune",
    "gcc -pthread -pedantic -o app main.c",
    "git add -p && git commit -a -m wip",
    "grep -w token -r src/",
    "sshpass -f ~/.sshpw ssh dev@host",
    "sshpass -e ssh dev@host",
    'sshpass -p "$SSHPASS" ssh dev@host',
    "ssh -p 2222 dev@host && sshpass -e scp a dev@host:",
    "docker run -p 8080:80 -p 8443:443 nginx",
    "docker login -u dev --password-stdin registry.example.com",
    "docker login registry.example.com",
    "redis-cli -p 6379 ping",
    "mongosh -u admin -p --authenticationDatabase admin",
    "ldapsearch -x -W -D cn=admin,dc=example,dc=org",
    "openssl enc -aes-256-cbc -in f -out f.enc -pass env:ENC_PASS",
    "openssl pkcs12 -in c.p12 -passin file:/run/secrets/p12",
    "keytool -list -keystore trust.jks -storepass changeit",
    "ls -la | sort -u | head -p",
    "The -u and -p options take the user and the password.",
]


@pytest.mark.parametrize("text", COMMAND_LOOK_ALIKES, ids=[t[:36] for t in COMMAND_LOOK_ALIKES])
def test_command_line_look_alikes_stay(text: str) -> None:
    kept(text)


def test_a_command_password_in_tool_input_goes() -> None:
    value = {"command": f"sshpass -p '{PW}' ssh dev@host", "description": "deploy"}
    out, counts = redact_value(value)
    assert out == {"command": "sshpass -p '[REDACTED:password]' ssh dev@host", "description": "deploy"}
    assert counts == {"password": 1}


# --- .netrc ------------------------------------------------------------------------------------------------

NETRC_PW = rand(HEX, 12)


@pytest.mark.parametrize(
    "template",
    [
        "machine api.github.com login octocat password {p}",
        "machine raw.example.com\n  login visionmedia\n  password {p}\n",
        '"""\nmachine api.wandb.ai\n  login user\n  password {p}\n"""',
        "default login anonymous password {p}",
        "machine ftp.example.com login dev password {p} account ops\nmachine other.example.com login x",
        '{{"stdout": "machine git.example.com\\n  login dev\\n  password {p}\\n"}}',
    ],
)
def test_netrc_password_goes(template: str) -> None:
    only(template.format(p=NETRC_PW), NETRC_PW)


@pytest.mark.parametrize(
    "text",
    [
        "machine learning login page password reset",
        "Enter the password below",
        "[sudo] password for dev:",
        "password for the machine api.github.com login is in the keyring",
        "machine api.github.com login octocat password",
        "machine example.com login dev password ${NETRC_PASSWORD}",
    ],
)
def test_netrc_look_alikes_stay(text: str) -> None:
    kept(text)


# --- Docker's config.json, kubeconfig, Laravel --------------------------------------------------------------

DOCKER_AUTH = base64.b64encode(f"janedoe:{PW}".encode()).decode()


@pytest.mark.parametrize(
    "template",
    [
        '{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{a}"}}}}}}',
        '{{\n  "auths": {{\n    "ghcr.io": {{\n      "auth": "{a}"\n    }}\n  }},\n  "credsStore": "desktop"\n}}',
        '{{\\"auths\\":{{\\"registry.example.com\\":{{\\"username\\":\\"janedoe\\",\\"auth\\":\\"{a}\\"}}}}}}',
    ],
)
def test_docker_config_auth_goes(template: str) -> None:
    only(template.format(a=DOCKER_AUTH), DOCKER_AUTH)


@pytest.mark.parametrize(
    "text",
    [
        '{"auths": {"ghcr.io": {}}, "credsStore": "desktop"}',
        '{"auths": {"registry.example.com": {"auth": ""}}}',
        '{"auths": {"r.example.com": {"auth": "' + base64.b64encode(b"no colon here").decode() + '"}}}',
        '{"auth": "oauth2", "auths": []}',
        '{"auth": {"type": "basic"}, "author": "dev"}',
    ],
)
def test_docker_config_look_alikes_stay(text: str) -> None:
    kept(text)


def test_docker_config_auth_in_a_json_value_goes() -> None:
    value = {"auths": {"registry.example.com": {"auth": DOCKER_AUTH, "email": "jane@example.com"}}}
    out, counts = redact_value(value)
    assert out["auths"]["registry.example.com"] == {"auth": "[REDACTED:password]", "email": "jane@example.com"}
    assert counts == {"password": 1}
    assert redact_value({"auth": "oauth2"})[1] == {}


CLIENT_KEY = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + RNG.randbytes(120)).decode()
CLIENT_CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIDxD" + RNG.randbytes(120)).decode()
KUBE_TOKEN = rand(ALNUM, 40)


def test_kubeconfig_client_key_and_token_go() -> None:
    text = (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {CLIENT_CERT}\n    client-key-data: {CLIENT_KEY}\n"
        f"- name: ci\n  user:\n    token: {KUBE_TOKEN}\n"
    )
    out, counts = redact(text)
    assert CLIENT_KEY not in out and KUBE_TOKEN not in out and CLIENT_CERT in out  # a certificate is public
    assert "client-key-data: [REDACTED:private-key]" in out and "token: [REDACTED:token]" in out
    assert counts == {"private-key": 1, "token": 1}
    as_json = json.dumps({"users": [{"user": {"client-key-data": CLIENT_KEY}}]})
    only(as_json, CLIENT_KEY, "private-key")
    value, counts = redact_value({"user": {"client-key-data": CLIENT_KEY, "client-certificate-data": CLIENT_CERT}})
    assert value == {"user": {"client-key-data": "[REDACTED:private-key]", "client-certificate-data": CLIENT_CERT}}


@pytest.mark.parametrize("text", ["    client-key-data: DATA+OMITTED", "    client-key-data: REDACTED",
                                  "client-key-data: ${CLIENT_KEY}"])
def test_kubeconfig_as_kubectl_prints_it_stays(text: str) -> None:
    kept(text)


APP_KEY = "base64:" + base64.b64encode(RNG.randbytes(32)).decode()


@pytest.mark.parametrize("template", ["APP_KEY={k}\n", "APP_ENV=production\nAPP_KEY={k}\nAPP_DEBUG=false\n",
                                      "export APP_KEY='{k}'", "app_key: {k}"])
def test_laravel_app_key_goes(template: str) -> None:
    only(template.format(k=APP_KEY), APP_KEY, "secret")


@pytest.mark.parametrize("text", ["APP_KEY=\nAPP_DEBUG=true\n", "APP_KEY=SomeRandomString",
                                  "php artisan key:generate  # sets APP_KEY", "PUSHER_APP_KEY=${APP_KEY}"])
def test_laravel_placeholders_stay(text: str) -> None:
    kept(text)


# --- .env lines after a literal \n (JSON tool output) -------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "secret", "kind"),
    [
        (f"DB_PASSWORD={WORD_PW}", WORD_PW, "password"),
        (f"MYSQL_ROOT_PASSWORD={PW}", PW, "password"),
        ("SECRET_KEY=" + rand(ALNUM, 40), None, "secret"),
        (f"APP_KEY={APP_KEY}", APP_KEY, "secret"),
        ("GITHUB_TOKEN=" + rand(ALNUM, 30), None, "token"),
        ("api_key=" + rand(ALNUM, 24), None, "api-key"),
    ],
)
def test_env_line_after_an_escaped_newline_goes(line: str, secret: str | None, kind: str) -> None:
    secret = secret or line.split("=", 1)[1]
    text = json.dumps({"stdout": f"APP_ENV=production\n{line}\nLOG_LEVEL=info\n", "code": 0})
    assert "\\n" + line + "\\n" in text  # the line sits between two escaped newlines
    only(text, secret, kind)


def test_env_lines_after_escaped_newlines_each_go_alone() -> None:
    pw1, pw2 = "Db" + rand(ALNUM, 10), "Rd" + rand(ALNUM, 10)
    text = '{"stdout": "DB_PASSWORD=' + pw1 + '\\nREDIS_PASSWORD=' + pw2 + '\\nDEBUG=true"}'
    out, counts = redact(text)
    assert out == ('{"stdout": "DB_PASSWORD=[REDACTED:password]\\nREDIS_PASSWORD=[REDACTED:password]'
                   '\\nDEBUG=true"}')
    assert counts == {"password": 2}


@pytest.mark.parametrize("text", ['{"stdout": "PATH=/usr/bin\\nHOME=/home/dev\\nDEBUG=true"}',
                                  '{"stdout": "DB_HOST=db\\nDB_PASSWORD=\\nDB_PORT=5432"}',
                                  '{"stdout": "APP_ENV=local\\nSECRET_KEY=changeme\\n"}',
                                  '{"stdout": "C:\\\\Users\\\\dev\\\\passwords.txt"}'])
def test_env_look_alikes_after_an_escaped_newline_stay(text: str) -> None:
    kept(text)


# --- URLs: signed query parameters, tokens as user names --------------------------------------------------

AMZ_SIGNATURE = rand(HEX, 64)
GOOG_SIGNATURE = rand(HEX, 256)
SAS_SIG = base64.b64encode(RNG.randbytes(32)).decode().replace("/", "%2F").replace("+", "%2B").replace("=", "%3D")
CF_SIGNATURE = rand(ALNUM + "~-", 120)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20130524T"
         f"000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature={AMZ_SIGNATURE}", AMZ_SIGNATURE),
        ("curl 'https://storage.googleapis.com/example-bucket/cat.jpeg?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-"
         f"Date=20181026T181309Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature={GOOG_SIGNATURE}'",
         GOOG_SIGNATURE),
        ("SharedAccessSignature sr=https%3a%2f%2fns.servicebus.windows.net%2fq&sig=" + SAS_SIG
         + "&se=1735689600&skn=RootManageSharedAccessKey", SAS_SIG),
        (f"https://d111111abcdef8.cloudfront.net/image.jpg?Expires=1357034400&Signature={CF_SIGNATURE}"
         "&Key-Pair-Id=K2JCJMDEHXQW5F", CF_SIGNATURE),
    ],
)
def test_a_signed_url_loses_its_signature(text: str, secret: str) -> None:
    only(text, secret, "token")


@pytest.mark.parametrize(
    "text",
    [
        "X-Amz-SignedHeaders=host&X-Amz-Signature=<signature>",
        "https://example.com/api?signature_version=4&sig=abc",
        "aws s3 presign s3://bucket/key --expires-in 600  # prints a URL with X-Amz-Signature=...",
        "def verify(signature=None):",
        "https://example.com/docs/signature=required",
    ],
)
def test_signed_url_look_alikes_stay(text: str) -> None:
    kept(text)


def test_a_token_as_the_user_name_of_a_url_goes() -> None:
    token = rand(HEX, 40)  # a classic OAuth token as GitHub took them in clone URLs
    only(f"git clone https://{token}@github.com/octo/app.git", token, "token")
    only(f'"url": "https://{token}:x-oauth-basic@github.com/octo/app"', token, "token")
    kept("git clone https://dev@example.com/repo.git && ssh://git@github.com:22/octo/app")
    kept("https://first.last-name@example.com/repo and mailto:x@example.com")


def test_a_url_password_holding_an_at_sign_goes_whole() -> None:
    only('CONNECTION_URI="postgres://postgres:s2Tf2k@rLMy@db.example.com:5434/elephant"', "s2Tf2k@rLMy",
         "url-password")
    only("mysql://nimda:m42p!o@2wd@db.example.com:5434/elephant", "m42p!o@2wd", "url-password")


# --- secrets cut by a real line break -------------------------------------------------------------------------

AWS_KEY_ID = "AKIA" + rand(string.ascii_uppercase + "234567", 16)
GITHUB_TOKEN = "ghp_" + rand(ALNUM, 36)


@pytest.mark.parametrize("brk", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize(("secret", "kind"), [(AWS_KEY_ID, "aws-access-key-id"), (GITHUB_TOKEN, "github-token")])
def test_a_key_cut_by_a_real_line_break_goes_whole(secret: str, kind: str, brk: str) -> None:
    for cut in (6, len(secret) // 2, len(secret) - 4):
        head, tail = secret[:cut], secret[cut:]
        text = f"$ cat creds | fold -w 40\n{head}{brk}{tail}\n$ ls\n"
        out, counts = redact(text)
        assert head not in out and tail not in out, (cut, out)
        assert out == text.replace(head + brk + tail, f"[REDACTED:{kind}]") and counts == {kind: 1}, (cut, out)


@pytest.mark.parametrize("brk", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_url_password_cut_by_a_real_line_break_goes(brk: str) -> None:
    text = f"DATABASE_URL=postgres://app:{PW[:5]}{brk}{PW[5:]}@db.internal:5432/app\n"
    out, counts = redact(text)
    assert PW[:5] not in out and PW[5:] not in out and counts == {"url-password": 1}, out
    assert out.startswith("DATABASE_URL=postgres://app:[REDACTED:url-password]@db.internal")


@pytest.mark.parametrize(
    "text",
    [
        f"{AWS_KEY_ID}\n2024-06-01 12:00:00 INFO started\n",  # a whole key, then a log line
        "export AWS_PROFILE=dev\nAKIA is the prefix of a long-term key id\n",
        "http://localhost:8080\nadmin@example.com is the contact\n",
        "See https://example.com:443\nuser@example.com wrote it.",
    ],
)
def test_a_line_after_a_key_or_a_url_is_not_taken_for_its_rest(text: str) -> None:
    out, _ = redact(text)
    assert out.split("\n")[1:] == text.split("\n")[1:], out
