"""The texts of generated agent history: prose, code, shell output, stack traces, diffs, paths, secrets.

Words and identifiers are this repository's own, in the frequencies its source and documentation have
(``bench/gen_bank.py``'s vocabulary, reused here). Lengths are log-normal: captured scripted runs say
nothing about them (the fake model answers in one sentence and reads two-line files), so the medians
below are those of working sessions (a prompt of a few sentences, a reply of a paragraph or two, a
tool output of ~1.5 KB with a long tail to hundreds of KB). A planted secret now and then (an Anthropic
or GitHub key, an AWS key pair, a PEM private key) gives redaction real work; ``SecretLog`` counts them.
"""

from __future__ import annotations

import keyword
import math
import random
import string
from dataclasses import dataclass, field

from bench.gen_bank import Texts

# Median characters and the log-normal sigma of each kind of text.
PROMPT = (160, 1.1)
REPLY = (450, 1.1)
THINKING = (700, 1.0)
TOOL_OUTPUT = (1500, 1.3)
OUTPUT_CAP = 256 * 1024  # an agent keeps a large output whole in its transcript up to about here
SECRET_RATE = 0.004  # share of tool outputs and prompts that carry a planted secret

LANGS = ("python", "python", "python", "bash", "json", "toml", "typescript", "sql")
EXTENSIONS = ("py", "py", "py", "md", "toml", "json", "ts", "sh", "sql", "yaml")
_B62 = string.ascii_letters + string.digits
_B32 = string.ascii_uppercase + "234567"


@dataclass
class SecretLog:
    """What was planted, by kind: the tree's manifest says how much redaction has to find."""

    planted: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.planted[kind] = self.planted.get(kind, 0) + 1


class Writing(Texts):
    """``gen_bank.Texts`` (the vocabulary, ``words_of``, ``prose``) plus the other things transcripts hold."""

    def __init__(self, rng: random.Random, secrets: SecretLog | None = None,
                 words: tuple[list[str], list[float]] | None = None) -> None:
        super().__init__(rng, words)
        self.secrets = secrets or SecretLog()
        self.identifiers = [w for w in self.words[:4000]
                            if w.isidentifier() and not w[0].isupper() and not keyword.iskeyword(w)]

    # -- sizes ------------------------------------------------------------------------------
    def sized(self, shape: tuple[float, float], cap: int = OUTPUT_CAP) -> int:
        median, sigma = shape
        return max(8, min(cap, int(self.rng.lognormvariate(math.log(median), sigma))))

    # -- small pieces -----------------------------------------------------------------------
    def ident(self) -> str:
        return self.rng.choice(self.identifiers)

    def path(self, root: str, ext: str | None = None) -> str:
        depth = self.rng.randint(1, 3)
        parts = [self.ident().lower() for _ in range(depth)]
        return f"{root}/{'/'.join(parts)}.{ext or self.rng.choice(EXTENSIONS)}"

    def hexid(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def sentence(self, words: int) -> str:
        return self.words_of(max(1, words)).capitalize() + "."

    def paragraphs(self, chars: int) -> str:
        out, size = [], 0
        while size < chars:
            para = " ".join(self.sentence(self.rng.randint(6, 22)) for _ in range(self.rng.randint(1, 5)))
            out.append(para)
            size += len(para) + 2
        return "\n\n".join(out)

    # -- code and output --------------------------------------------------------------------
    def code_line(self, indent: int) -> str:
        rng = self.rng
        pick = rng.random()
        pad = "    " * indent
        if pick < 0.25:
            return f"{pad}def {self.ident()}({self.ident()}: {self.ident()}, {self.ident()}: int = {rng.randint(0, 99)}) -> {self.ident()}:"
        if pick < 0.55:
            return f"{pad}{self.ident()} = {self.ident()}.{self.ident()}({self.ident()}, {self.ident()}={self.ident()!r})"
        if pick < 0.7:
            return f"{pad}if {self.ident()} is not None and {self.ident()} > {rng.randint(0, 500)}:"
        if pick < 0.8:
            return f"{pad}# {self.words_of(rng.randint(3, 12))}"
        if pick < 0.9:
            return f"{pad}return {self.ident()}({self.ident()})"
        return ""

    def code(self, lines: int) -> str:
        indent, out = 0, []
        for _ in range(lines):
            line = self.code_line(indent)
            out.append(line)
            indent = min(3, indent + 1) if line.endswith(":") else max(0, indent - (self.rng.random() < 0.2))
        return "\n".join(out)

    def code_for(self, chars: int) -> str:
        return self.code(max(1, chars // 45))

    def numbered(self, text: str, first: int = 1, style: str = "tab") -> str:
        """``cat -n`` (Claude Code's Read: "  12\\tline") or opencode's "12: line"."""
        lines = text.split("\n")
        if style == "colon":
            return "\n".join(f"{first + i}: {line}" for i, line in enumerate(lines))
        return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))

    def traceback(self, root: str) -> str:
        frames = [f'  File "{self.path(root, "py")}", line {self.rng.randint(1, 900)}, in {self.ident()}\n'
                  f"    {self.code_line(0).strip() or 'pass'}" for _ in range(self.rng.randint(2, 9))]
        error = self.rng.choice(("KeyError", "ValueError", "AssertionError", "TypeError", "sqlite3.OperationalError"))
        return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{error}: {self.words_of(6)}"

    def pytest_output(self, root: str, chars: int) -> str:
        rng = self.rng
        lines = ["============================= test session starts ==============================",
                 f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 9)}",
                 f"rootdir: {root}", f"collected {rng.randint(5, 900)} items", ""]
        size = sum(map(len, lines))
        while size < chars:
            if rng.random() < 0.08:
                line = "\n" + self.traceback(root) + "\n"
            else:
                line = f"tests/test_{self.ident()}.py {'.' * rng.randint(1, 40)}{'F' if rng.random() < 0.1 else ''}"
            lines.append(line)
            size += len(line) + 1
        lines.append(f"========== {rng.randint(0, 5)} failed, {rng.randint(5, 900)} passed in {rng.random() * 60:.2f}s ==========")
        return "\n".join(lines)

    def grep_output(self, root: str, chars: int) -> str:
        lines, size = [], 0
        while size < chars:
            line = f"{self.path(root, 'py')}:{self.rng.randint(1, 900)}:{self.code_line(self.rng.randint(0, 2))}"
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)

    def git_log(self, chars: int) -> str:
        out, size = [], 0
        while size < chars:
            entry = (f"commit {self.hexid(40)}\nAuthor: Dev <dev@example.invalid>\n"
                     f"Date:   2026-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 28):02d}\n\n"
                     f"    {self.sentence(self.rng.randint(4, 12))}\n")
            out.append(entry)
            size += len(entry)
        return "\n".join(out)

    def listing(self, root: str, chars: int) -> str:
        lines, size = [f"total {self.rng.randint(8, 900)}"], 0
        while size < chars:
            line = (f"-rw-r--r-- 1 dev dev {self.rng.randint(0, 90000):>6} Nov {self.rng.randint(1, 30):>2} "
                    f"{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d} {self.path(root).rsplit('/', 1)[1]}")
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)

    def diff(self, path: str, chars: int) -> str:
        lines = [f"--- a/{path}", f"+++ b/{path}"]
        size = 0
        while size < chars:
            start = self.rng.randint(1, 800)
            lines.append(f"@@ -{start},7 +{start},8 @@ def {self.ident()}")
            for _ in range(self.rng.randint(3, 12)):
                mark = self.rng.choice(" +- ")
                line = f"{mark}{self.code_line(self.rng.randint(0, 2))}"
                lines.append(line)
                size += len(line) + 1
        return "\n".join(lines)

    def shell_output(self, root: str, chars: int) -> str:
        pick = self.rng.random()
        if pick < 0.35:
            text = self.pytest_output(root, chars)
        elif pick < 0.55:
            text = self.grep_output(root, chars)
        elif pick < 0.7:
            text = self.git_log(chars)
        elif pick < 0.8:
            text = self.listing(root, chars)
        elif pick < 0.9:
            text = self.diff(self.path("src", "py"), chars)
        else:
            text = self.traceback(root)
        return self.maybe_secret(text)

    def command(self, root: str) -> str:
        rng = self.rng
        return rng.choice((
            f"cd {root} && python -m pytest -q tests/test_{self.ident()}.py",
            f"rg -n '{self.ident()}' {root}/{self.ident()}",
            f"git log --oneline -n {rng.randint(5, 60)}",
            f"ls -la {root}/{self.ident()}",
            f"git diff -- {self.path(root, 'py')}",
            f"python -c 'import {self.ident()}; print({self.ident()}.{self.ident()})'",
            f"sed -n {rng.randint(1, 300)},{rng.randint(301, 600)}p {self.path(root, 'py')}",
        ))

    # -- conversation -----------------------------------------------------------------------
    def prompt(self, root: str) -> str:
        text = self.paragraphs(self.sized(PROMPT, 12000))
        if self.rng.random() < 0.3:
            text += f"\n\nSee {self.path(root)} around line {self.rng.randint(1, 600)}."
        if self.rng.random() < 0.15:
            text += "\n\n```\n" + self.traceback(root) + "\n```"
        return self.maybe_secret(text)

    def reply(self, root: str) -> str:
        chars = self.sized(REPLY, 30000)
        text = self.paragraphs(chars * 2 // 3)
        if self.rng.random() < 0.45:
            lang = self.rng.choice(LANGS)
            text += f"\n\n```{lang}\n{self.code_for(max(60, chars // 3))}\n```\n\n{self.sentence(self.rng.randint(5, 20))}"
        if self.rng.random() < 0.3:
            text += "\n\n" + "\n".join(f"- `{self.path(root)}`: {self.words_of(self.rng.randint(4, 14))}"
                                      for _ in range(self.rng.randint(2, 6)))
        return text

    def thinking(self) -> str:
        return self.paragraphs(self.sized(THINKING, 20000))

    def file_text(self) -> str:
        return self.code_for(self.sized(TOOL_OUTPUT))

    def output_size(self) -> int:
        return self.sized(TOOL_OUTPUT)

    # -- secrets ----------------------------------------------------------------------------
    def _random(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choices(alphabet, k=n))

    def secret(self) -> str:
        pick = self.rng.random()
        if pick < 0.35:
            self.secrets.add("anthropic-api-key")
            return f"export ANTHROPIC_API_KEY=sk-ant-api03-{self._random(_B62 + '-_', 93)}AA"
        if pick < 0.6:
            self.secrets.add("aws-access-key-id")
            self.secrets.add("aws-secret-access-key")
            return (f"[default]\naws_access_key_id = AKIA{self._random(_B32, 16)}\n"
                    f"aws_secret_access_key = {self._random(_B62 + '+/', 40)}")
        if pick < 0.85:
            self.secrets.add("github-token")
            return f"GITHUB_TOKEN=ghp_{self._random(_B62, 36)}"
        self.secrets.add("private-key")
        body = "\n".join(self._random(_B62 + "+/", 64) for _ in range(6))
        return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"

    def maybe_secret(self, text: str) -> str:
        if self.rng.random() >= SECRET_RATE:
            return text
        lines = text.split("\n")
        lines.insert(self.rng.randint(0, len(lines)), self.secret())
        return "\n".join(lines)
