"""What a model response cost: prices from genai-prices, kept per model in a small cache file.

The catalogue is genai-prices (pydantic/genai-prices, PyPI ``genai-prices``): maintained by Pydantic from the
providers' own price pages, bundled in its wheel (it prices offline; harvester never asks it to update over the
network), by provider and model with the model names each provider's API answers to, the dates prices changed,
and cache reads and writes (five-minute and hour-long) priced apart; tiers by input size. ccusage prices from a
LiteLLM snapshot instead (README of harvester/usage says where the two differ).

Importing it costs about a quarter of a second, more than a whole report may take. So what it says of each model
a bank names is asked once and kept (:class:`PriceBook`, a JSON file beside the bank, of one genai-prices
version, replaced atomically): per model, its price periods (the dates its prices changed), and in
each the price of one token of input, output, cache read, cache write and hour-long cache write for every input
tier. Those are got by having genai-prices price unit usages, so its own rules decide (what an uncached model
charges for a cached token, how a tier applies: to the whole request, by its whole input); a report then prices
its grouped rows (a few hundred) by arithmetic. Not kept: time-of-day discounts (DeepSeek's off-peak hours; the
standard price is used) and request-specific variants (service tiers).

A model genai-prices does not know is kept as unknown (``None``): its tokens are counted and its cost is
"unknown", never zero.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATALOGUE = "genai-prices"
# Token categories a unit price is kept for, in this order (see :func:`_probe`).
CATEGORIES = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
PROBE_TIME = "T12:00:00+00:00"  # noon UTC: outside every time-of-day discount window


@dataclass(slots=True)
class ModelPrices:
    """One model's prices: ``periods`` is [(first day, {tier start: unit prices})], oldest first; a tier
    start is the input size (input + cache read + cache write) a request must exceed for it (0: every
    request). Unit prices are USD per token in :data:`CATEGORIES` order (None: genai-prices cannot price it)."""

    provider: str
    model: str
    periods: list[tuple[str, dict[int, list[float | None]]]]

    def unit_prices(self, day: str, tier: int) -> list[float | None]:
        chosen = self.periods[0][1]
        for start, tiers in self.periods:
            if start <= day:
                chosen = tiers
        below = [t for t in chosen if t <= tier]
        return chosen[max(below)] if below else chosen[min(chosen)]


@dataclass
class PriceBook:
    """The prices of the models a bank names, as the catalogue (this version of it) gave them."""

    version: str
    thresholds: list[int]  # every tier start in the catalogue: the input sizes a report groups requests by
    models: dict[str, ModelPrices | None] = field(default_factory=dict)
    path: Path | None = None
    changed: bool = False

    def lookup(self, models: set[str]) -> dict[str, ModelPrices | None]:
        """The prices of ``models``: from the book, asking the catalogue for those it lacks (kept for next time)."""
        missing = sorted(m for m in models if m not in self.models)
        if missing:
            snapshot = _snapshot()
            for model in missing:
                self.models[model] = _resolve(snapshot, model)
            self.changed = True
            self.save()
        return {m: self.models[m] for m in models}

    def save(self) -> None:
        """Write the book (atomically: a report beside another never reads half a file); a cache that cannot be
        written only costs the next report the catalogue's import."""
        if self.path is None or not self.changed:
            return
        data = {"catalogue": CATALOGUE, "version": self.version, "thresholds": self.thresholds,
                "models": {name: None if p is None else {"provider": p.provider, "model": p.model, "periods": [
                    [start, {str(k): v for k, v in tiers.items()}] for start, tiers in p.periods]}
                           for name, p in sorted(self.models.items())}}
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".prices-", suffix=".json")
            try:
                with os.fdopen(fd, "w") as out:
                    json.dump(data, out, separators=(",", ":"))
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        self.changed = False


def cache_path(bank: str | os.PathLike[str] | None = None) -> Path:
    """Where the book is kept: beside the bank (``<bank>.prices.json``, as its archive and lock are: a bank
    someone reads is where harvester writes), else in the user's cache directory."""
    if bank:
        return Path(f"{os.fspath(bank)}.prices.json")
    import platformdirs

    return platformdirs.user_cache_path("harvester") / "prices.json"


def catalogue_version() -> str:
    """The installed genai-prices' version, from its distribution's folder name (importlib.metadata costs a
    report a sixth of its time); that failing, from importlib.metadata."""
    from importlib.util import find_spec

    spec = find_spec("genai_prices")
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = sorted(site.glob("genai_prices-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix("genai_prices-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version(CATALOGUE)


def load_book(path: Path | None = None) -> PriceBook:
    """The price book of this catalogue version: the cached one, else a new one (the catalogue is imported to
    know its tier starts)."""
    path = path or cache_path()
    current = catalogue_version()
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads(path.read_text())
        if data.get("catalogue") == CATALOGUE and data.get("version") == current:
            models = {name: None if p is None else ModelPrices(p["provider"], p["model"], [
                (start, {int(k): v for k, v in tiers.items()}) for start, tiers in p["periods"]])
                for name, p in data["models"].items()}
            return PriceBook(current, [int(t) for t in data["thresholds"]], models, path)
    book = PriceBook(current, _thresholds(_snapshot()), {}, path, changed=True)
    book.save()
    return book


def _snapshot() -> Any:
    # Here: a quarter of a second, paid only when the book lacks a model.
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


def _thresholds(snapshot: Any) -> list[int]:
    from genai_prices import types

    starts: set[int] = set()
    for provider in snapshot.providers:
        for model in provider.models:
            for conditional in _conditionals(model):
                for value in conditional.prices.__dict__.values():
                    if isinstance(value, types.TieredPrices):
                        starts.update(tier.start for tier in value.tiers)
    return sorted(starts)


def _conditionals(model: Any) -> list[Any]:
    from genai_prices import types

    return model.prices if isinstance(model.prices, list) else [types.ConditionalPrice(prices=model.prices)]


def _resolve(snapshot: Any, ref: str) -> ModelPrices | None:
    """A model reference as an agent recorded it (``claude-sonnet-4-5-20250929``, ``openai/gpt-5``): its prices,
    or None when the catalogue knows no such model. The provider is inferred from the name; a ``provider/``
    prefix names it."""
    found = None
    attempts = [(ref, None)]
    if "/" in ref:
        provider, _, bare = ref.partition("/")
        attempts += [(bare, provider), (bare, None)]
    for model_ref, provider_id in attempts:
        try:
            found = snapshot.find_provider_model(model_ref, None, provider_id, None)
            break
        except LookupError:
            continue
    if found is None:
        return None
    provider, info = found
    starts = sorted({str(c.constraint.start_date) for c in _conditionals(info)
                     if type(c.constraint).__name__ == "StartDateConstraint"})
    thresholds = [0, *_thresholds_of(info)]
    periods = []
    for start in ["", *starts]:
        probe_day = start or "2000-01-01"
        tiers = {t: _probe(info, provider, probe_day, t) for t in thresholds}
        periods.append((start, tiers))
    return ModelPrices(provider.id, info.id, periods)


def _thresholds_of(info: Any) -> list[int]:
    from genai_prices import types

    return sorted({tier.start for c in _conditionals(info) for value in c.prices.__dict__.values()
                   if isinstance(value, types.TieredPrices) for tier in value.tiers})


def _probe(info: Any, provider: Any, day: str, tier: int) -> list[float | None]:
    """The price of one token of each category for a request of ``day`` whose input exceeds ``tier``: genai-prices
    prices a request of that size with and without N tokens of the category (N = its input, so a cache read or
    write is part of it, as genai-prices counts input), and the difference is N tokens' price."""
    from datetime import datetime

    from genai_prices import Usage

    when = datetime.fromisoformat(day + PROBE_TIME)
    n = tier + 1 if tier else 1000

    def price(**usage: int) -> float | None:
        try:
            return float(info.calc_price(Usage(**usage), provider, genai_request_timestamp=when).total_price)
        except (ValueError, TypeError, ArithmeticError):
            return None

    base = price(input_tokens=n)
    with_output = price(input_tokens=n, output_tokens=n)
    out: list[float | None] = [
        None if base is None else base / n,
        None if base is None or with_output is None else (with_output - base) / n,
    ]
    for usage in ({"cache_read_tokens": n}, {"cache_write_tokens": n},
                  {"cache_write_tokens": n, "cache_write_1h_tokens": n}):
        value = price(input_tokens=n, **usage)
        out.append(None if value is None else value / n)
    return out
