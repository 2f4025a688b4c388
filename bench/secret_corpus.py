"""Recall and false positives of ``harvester.redact`` on the public rule sets' documented examples.

Run: ``python bench/secret_corpus.py [--misses] [--family NAME]``

The corpus (``fixtures/secrets/corpus.jsonl``, its origin in ``fixtures/secrets/SOURCE.md``) holds the true and
false positive examples that gitleaks, Nosey Parker, Kingfisher and detect-secrets ship with their rules, the
documentation examples of the tools and services whose credentials they are (values generated where the
documentation shows a placeholder), and a few look-alikes of ours. Each example is labelled with the substrings
that must not survive (none: a negative, which must come out unchanged), and some with substrings that must
(``keep``: the log line after a key, which is no part of it).

Recall is the share of positive examples with every secret substring gone; the false positive rate, the share
of negatives that ``redact`` changed at all, together with the examples whose ``keep`` did not survive. Positives that the redaction keeps on purpose (a
placeholder word such as ``password``, a value in braces read as a template: see ``harvester/redact``'s
Decisions) carry a ``policy`` and are counted apart, not as misses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "secrets" / "corpus.jsonl"
SPLICE = "\u2039\u203a"  # written into every long run of the file so that no literal token sits in the repository


@dataclass(frozen=True, slots=True)
class Example:
    family: str
    source: str
    text: str
    secrets: tuple[str, ...]
    policy: str | None = None
    keep: tuple[str, ...] = ()


@dataclass(slots=True)
class Score:
    positives: int = 0
    found: int = 0
    policy: int = 0  # positives kept on purpose
    negatives: int = 0
    false_positives: int = 0
    misses: list[Example] = field(default_factory=list)
    wrongly_changed: list[Example] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.positives if self.positives else 1.0

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.negatives if self.negatives else 0.0


def load(path: Path = CORPUS) -> list[Example]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(Example(row["family"], row["source"], row["text"].replace(SPLICE, ""),
                           tuple(s.replace(SPLICE, "") for s in row["secrets"]), row.get("policy"),
                           tuple(k.replace(SPLICE, "") for k in row.get("keep", ()))))
    return out


def score(examples: list[Example], redact: Callable[[str], tuple[str, dict[str, int]]] | None = None
          ) -> dict[str, Score]:
    """Per family, and ``"all"`` over every example."""
    if redact is None:
        from harvester.redact import redact
    scores: dict[str, Score] = {}
    for ex in examples:
        out, counts = redact(ex.text)
        for key in (ex.family, "all"):
            s = scores.setdefault(key, Score())
            if not ex.secrets or ex.keep:
                s.negatives += 1
                if (counts or out != ex.text) if not ex.secrets else any(k not in out for k in ex.keep):
                    s.false_positives += 1
                    s.wrongly_changed.append(ex)
            if not ex.secrets:
                continue
            if ex.policy:
                s.policy += 1
            else:
                s.positives += 1
                if all(secret not in out for secret in ex.secrets):
                    s.found += 1
                else:
                    s.misses.append(ex)
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", action="store_true", help="print each missed positive and changed negative")
    ap.add_argument("--family", help="only this family")
    args = ap.parse_args()
    examples = [e for e in load() if args.family in (None, e.family)]
    scores = score(examples)
    print(f"{'family':22} {'recall':>14} {'false positives':>17} {'kept by policy':>15}")
    for name in sorted(scores, key=lambda n: (n == "all", n)):
        s = scores[name]
        print(f"{name:22} {s.found:>4}/{s.positives:<4} {s.recall:5.0%} {s.false_positives:>4}/{s.negatives:<4}"
              f" {s.false_positive_rate:6.1%} {s.policy:>15}")
    if args.misses:
        for name, s in sorted(scores.items()):
            if name == "all":
                continue
            for ex in s.misses:
                print(f"\nMISSED [{name}] {ex.source}\n  {ex.text[:300]!r}")
            for ex in s.wrongly_changed:
                print(f"\nCHANGED [{name}] {ex.source}\n  {ex.text[:300]!r}")


if __name__ == "__main__":
    main()
