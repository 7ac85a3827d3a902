"""Checking a ladder and its trigger on a recorded run: what was kept, what it cost.

[`check_log`][compaction.check.run.check_log] replays one agent log call by call through a
[`Compactor`][compaction.trigger.Compactor] built from a [`Config`][compaction.config.Config]
and measures every request it would have sent, with instruments of its own rather than what
the ladder reports about itself:

- **fit and validity**: requests over the window; requests a provider would refuse (tool pairs,
  roles: [`compaction.validate.problems`][]);
- **the task**: calls whose request no longer holds the original task (verbatim, or cut with
  its head and tail kept: [`compaction.check.task`][]);
- **the person's identifiers** ([`compaction.check.identifiers`][]): of every person-written
  message a compaction removed, which of its codes, numbers, dates, paths, names, URLs and
  addresses the request still shows, by kind;
- **the probe facts** ([`compaction.check.probe`][]: task ids, the last files edited, the
  last failing test, error and command, read from the raw log) that the request lets the
  model recover, among those the run had shown by then;
- **money**, given a price: the run priced with the prompt cache, against no compaction and
  against the default trigger, the summariser's calls included; the cache's share; the
  compactions and the calls between them (the rebound).

A request changes only where a compaction rewrote it: between two compactions each request is
the previous one plus what the agent appended, which cannot lose a fact, an identifier or the
task, nor break a pair the log itself keeps. So the kept-and-lost measures are taken where a
compaction happened (and on the request the agent would send next, after the run) and carried
forward over the calls that follow; fit is measured on every call. That keeps a check linear in
the number of compactions times the window, not quadratic in the log.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from ..config import Config
from ..memory.transcript import is_person_written
from ..messages import Message
from ..trigger import Compactor
from ..validate import problems
from .identifiers import KINDS, identifiers
from .logs import UnreadableLog
from .probe import log_facts, run_text
from .task import is_demonstration, original_task, task_kept

__all__ = ["MIN_SHARE_WINDOW", "Kept", "LogCheck", "check_log", "resolve_window"]


@attrs.frozen(slots=True)
class Kept:
    """``kept`` of ``asked``; ``share`` is 1.0 when nothing was asked (nothing to lose)."""

    kept: int = 0
    asked: int = 0

    @property
    def share(self) -> float:
        return self.kept / self.asked if self.asked else 1.0

    def __add__(self, other: Kept) -> Kept:
        return Kept(self.kept + other.kept, self.asked + other.asked)

    @classmethod
    def total(cls, parts: Iterable[Kept]) -> Kept:
        """The sum of ``parts`` (nothing asked when there are none)."""
        out = cls()
        for part in parts:
            out = out + part
        return out


@attrs.frozen
class LogCheck:
    """What one log's replay measured (see the module docstring).

    ``calls`` model calls; ``compactions`` those that compacted first; ``over_window`` requests
    over it; ``invalid`` requests a provider would refuse; ``task_lost`` calls whose request
    lost the task; ``identifiers`` by kind and ``facts``; ``cost`` (the run, summariser
    included), ``uncompacted`` (the same calls with no compaction), ``default`` (the default
    trigger) and ``summary_cost`` in USD, None when unpriced; ``cache_share`` the share of
    tokens sent that a prompt cache could reuse; ``rebound`` the median calls from one
    compaction to the next (None with fewer than two); ``facts_note`` why no fact was asked
    (the raw log's reader does not know the format); ``price_note`` why a log asked to be
    priced was not (its recorded usage or times cannot be true).
    """

    path: str
    format: str
    tokens: int
    window: int
    calls: int
    compactions: int
    over_window: int
    invalid: int
    task_lost: int
    identifiers: dict[str, Kept]
    facts: Kept
    cost: float | None = None
    uncompacted: float | None = None
    default: float | None = None
    summary_cost: float | None = None
    cache_share: float = 0.0
    rebound: float | None = None
    facts_note: str = ""
    price_note: str = ""

    @property
    def identifiers_total(self) -> Kept:
        return Kept.total(self.identifiers.values())

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for JSON."""
        return {
            "path": self.path,
            "format": self.format,
            "tokens": self.tokens,
            "window": self.window,
            "calls": self.calls,
            "compactions": self.compactions,
            "over_window": self.over_window,
            "invalid": self.invalid,
            "task_lost": self.task_lost,
            "identifiers": {k: [v.kept, v.asked] for k, v in self.identifiers.items()},
            "identifiers_share": round(self.identifiers_total.share, 4),
            "facts": [self.facts.kept, self.facts.asked],
            "facts_share": round(self.facts.share, 4),
            "facts_note": self.facts_note,
            "price_note": self.price_note,
            "cost": _usd(self.cost),
            "uncompacted": _usd(self.uncompacted),
            "default": _usd(self.default),
            "summary_cost": _usd(self.summary_cost),
            "cache_share": round(self.cache_share, 4),
            "rebound": self.rebound,
        }


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


#: A window given as a share of a log is never smaller than this: a few-hundred-token log
#: needs no compaction at any real window, and shrinking it into a toy one only measures the
#: markers a cut leaves.
MIN_SHARE_WINDOW: Final = 1000


def resolve_window(window: int | float, tokens: int) -> int:
    """A window in tokens: an int as it is, a share in (0, 1] of the log's ``tokens`` (at
    least ``MIN_SHARE_WINDOW``)."""
    if isinstance(window, bool) or not isinstance(window, int | float):
        raise TypeError(
            f"window must be tokens (int) or a share of the log (float), got {window!r}"
        )
    if isinstance(window, float):
        if not 0 < window <= 1:
            raise ValueError(
                f"a window given as a share of the log must be in (0, 1], got {window}"
            )
        return max(MIN_SHARE_WINDOW, int(tokens * window))
    if window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window}")
    return window


class _Persons:
    """The person-written messages of a run and their identifiers, read once."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.found: list[tuple[int, Message, dict[str, list[str]]]] = []
        for i, m in enumerate(messages):
            if is_person_written(m) and m.content and not is_demonstration(m):
                ids = identifiers(m.content)
                if any(ids.values()):
                    self.found.append((i, m, ids))

    def kept(self, stop: int, request: Sequence[Message], text: str) -> dict[str, Kept]:
        """Per kind, the identifiers of person messages before ``stop`` that ``request`` no
        longer holds whole, and of those how many its visible ``text`` still shows."""
        present = {id(m) for m in request}
        contents = {m.content for m in request if m.role == "user"}
        out = {kind: Kept() for kind in KINDS}
        for index, message, ids in self.found:
            if index >= stop:
                break
            if id(message) in present or message.content in contents:
                continue
            for kind, values in ids.items():
                if values:
                    hits = sum(1 for v in values if v in text)
                    out[kind] = out[kind] + Kept(hits, len(values))
        return out


class _Facts:
    """The probe facts of a run, each with the first message that shows it."""

    def __init__(self, path: Path, messages: Sequence[Message]) -> None:
        self.note = ""
        self.first: list[tuple[int, Any]] = []
        try:
            found = log_facts(path, messages)
        except UnreadableLog as exc:
            self.note = exc.reason
            return
        texts = [run_text([m]) if m.role != "system" else "" for m in messages]
        for fact in found.asked:
            at = next((i for i, t in enumerate(texts) if fact.recovered(t)), None)
            if at is None:  # shown only across messages: asked from the end of the run
                at = len(messages) - 1
            self.first.append((at, fact))

    def kept(self, stop: int, text: str) -> Kept:
        asked = [fact for at, fact in self.first if at < stop]
        return Kept(sum(1 for f in asked if f.recovered(text)), len(asked))


def _priced_cost(records: Sequence[Any], price: Any) -> tuple[float, float, float]:
    """(the run with its summariser calls, the summariser calls, the run uncompacted)."""
    run = sum(r.cost.cost for r in records if r.cost is not None)
    base = sum(r.baseline.cost for r in records if r.baseline is not None)
    summary = sum(
        (r.summary_tokens[0] * price.input + r.summary_tokens[1] * price.output) / 1e6
        for r in records
    )
    return run + summary, summary, base


def check_log(
    path: str | Path,
    config: Config | None = None,
    *,
    window: int | float = 0.5,
    price: Any = None,
    counter: Any = None,
    messages: Sequence[Message] | None = None,
    format: str | None = None,
    default_cost: bool = True,
) -> LogCheck:
    """Replay the log at ``path`` through ``config``'s trigger and ladder and measure it.

    ``window`` is the model's window in tokens, or (a float) a share of the log's own size,
    so that a log smaller than a real window still shows what compaction would do; ``price``
    a [`Price`][compaction.pricing.prices.Price] to price the run with the prompt cache;
    ``messages`` the log as already read (else [`compaction.formats.load`][] reads it);
    ``default_cost`` also replays the default trigger for comparison (when priced).
    """
    from ..pricing.recorded import RecordedUsageError
    from ..tokens import TiktokenCounter

    path = Path(path)
    config = config or Config()
    counter = counter or TiktokenCounter()
    if messages is None:
        from ..formats import load

        loaded = load(path)
        messages, format = loaded.messages, format or loaded.format
    args = (path, config, window, counter, tuple(messages), format or "", default_cost)
    if price is None:
        return _check(*args, None)
    try:
        return _check(*args, price)
    except RecordedUsageError as exc:
        # What it kept is still checked; its money is left out, and the report says why.
        return attrs.evolve(_check(*args, None), price_note=" ".join(str(exc).split()))


def _check(
    path: Path,
    config: Config,
    window: int | float,
    counter: Any,
    messages: tuple[Message, ...],
    format: str,
    default_cost: bool,
    price: Any,
) -> LogCheck:
    from ..replay import replay

    tokens = counter.count_messages(messages)
    size = resolve_window(window, tokens)
    compactor = Compactor.from_config(config, size, counter=counter, price=price)
    persons = _Persons(messages)
    found = _Facts(path, messages)
    task = original_task(messages)
    state = {"task": True, "valid": True}
    ids = {kind: Kept() for kind in KINDS}
    facts = Kept()
    over = invalid = lost = compactions = 0
    records: list[Any] = []
    compacted_at: list[int] = []

    def measure(stop: int, request: Sequence[Message]) -> None:
        nonlocal ids, facts
        text = run_text(request)
        for kind, kept in persons.kept(stop, request, text).items():
            ids[kind] = ids[kind] + kept
        facts = facts + found.kept(stop, text)
        state["task"] = task is None or task_kept(task, request) is not None
        state["valid"] = not problems(request)

    for record in replay(messages, compactor, keep_requests=True, price=price):
        request = record.request or ()
        if record.compacted:
            compactions += 1
            compacted_at.append(record.call)
            measure(record.index, request)
        over += record.tokens_sent > size
        invalid += not state["valid"]
        lost += not state["task"]
        records.append(attrs.evolve(record, request=None))
    after = compactor.before_call(messages)
    if compactor.last_result is not None and compactor.last_result.changed:
        measure(len(messages), after)
    gaps = [b - a for a, b in itertools.pairwise(compacted_at)]
    result = LogCheck(
        path=str(path),
        format=format or "",
        tokens=tokens,
        window=size,
        calls=len(records),
        compactions=compactions,
        over_window=over,
        invalid=invalid,
        task_lost=lost,
        identifiers=ids,
        facts=facts,
        cache_share=_cache_share(records),
        rebound=statistics.median(gaps) if gaps else None,
        facts_note=found.note,
    )
    if price is None:
        return result
    cost, summary, base = _priced_cost(records, price)
    default: float | None = cost
    if default_cost and not _is_default(config):
        default = _default_cost(messages, size, counter, price)
    return attrs.evolve(result, cost=cost, uncompacted=base, default=default, summary_cost=summary)


def _cache_share(records: Sequence[Any]) -> float:
    sent = sum(r.tokens_sent for r in records)
    return sum(r.prefix_tokens for r in records) / sent if sent else 0.0


def _is_default(config: Config) -> bool:
    return attrs.evolve(config, check={}, source="config", window=None) == Config()


def _default_cost(messages: Sequence[Message], window: int, counter: Any, price: Any) -> float:
    from ..replay import replay

    compactor = Compactor.from_config(Config(), window, counter=counter)
    records = list(replay(messages, compactor, price=price))
    return _priced_cost(records, price)[0]
