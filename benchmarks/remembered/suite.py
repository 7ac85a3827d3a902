"""The ``remembered`` suite: what the person said, after five compactions in a row.

Sessions come from the benchmark's own generator (:mod:`benchmarks.remembered.sessions`):
chat sessions and agent runs in which the person plants typed statements (rules,
constraints, facts, preferences, goals) with unguessable values, two of them superseded
later. Each is compacted by the library's default ladder (``compaction.default_pipeline()``,
the public API only) five rounds in a row at budgets of 10%, 20% and 30% of the session's
full token count, and judged by :mod:`benchmarks.remembered.judge`.

**Protocol: the conversation grows between rounds.** The session is cut into five parts at
turn boundaries; round *r* compacts round *r-1*'s output with part *r* appended. This is how
an agent meets compaction: new turns arrive, the trigger compacts what it carries forward,
and a statement made early goes through every later round (its own words, or the note that
replaced them, compacted again and again). Compacting a fixed conversation again is a no-op
once it fits (a layer is asked only while the conversation is over target), so five rounds
of that measure one. That protocol (the issue's reference) is reported beside it as
``fixed``: the whole session compacted, then its output four more times.

A statement counts in round *r* once the person has made it (its part has arrived), by its
subject's *current* value: a superseded value is not expected to survive, and is judged by
the stale rule instead.

**Measured the way it failed.** Every session is counted two ways: by tiktoken (``tokens``)
and in characters (``chars``: a character budget, where the ledger's values cost what they
are long, so a budget of 10% of a small session cannot hold the whole ledger). Besides the
chat and agent sessions, ``small`` chat sessions of 6-8k characters (10 turns, 6 statements)
are where the whole ledger does not fit. The default ladder runs beside the free one
(``tool_results`` → ``sliding_window`` → ``fit``, no summary), and each round records how much
of its budget it used (``after / target``, for rounds that started over target).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from compaction import CompactionPipeline, Message, TiktokenCounter, default_pipeline
from compaction.tokens import CachingCounter, TokenCounter

from ..common.measure import progress
from .judge import stale, visible_text
from .sessions import KINDS, Session, agent_session, chat_session

__all__ = [
    "BUDGETS",
    "COUNTERS",
    "LADDERS",
    "ROUNDS",
    "SEEDS",
    "capacity",
    "parts",
    "run",
    "run_session",
]

BUDGETS: Final = (0.10, 0.20, 0.30)
ROUNDS: Final = 5
SEEDS: Final = tuple(range(1, 9))
QUICK_SEEDS: Final = (1, 2)
SHAPES: Final = ("chat", "agent", "small")
COUNTERS: Final = ("tokens", "chars")
LADDERS: Final = ("default", "free")


class Chars(CachingCounter):
    """A character budget: a message costs its characters and 12 for its framing."""

    name = "chars"
    per_message = 12
    per_name = 0
    per_tool_call = 0

    def count_text(self, text: str) -> int:
        return len(text)


def counter_for(name: str) -> TokenCounter:
    return Chars() if name == "chars" else TiktokenCounter()


def ladder(name: str, counter: TokenCounter) -> CompactionPipeline:
    """The default ladder, or the free one (no summary) beside it."""
    if name == "default":
        return default_pipeline(counter=counter)
    from compaction.strategies.fit import Fit
    from compaction.strategies.sliding_window import SlidingWindow
    from compaction.strategies.tool_results import ToolResults

    return CompactionPipeline(counter=counter).use(ToolResults()).use(SlidingWindow()).run(Fit())


def small_session(seed: int) -> Session:
    """A small chat (6-8k characters): 10 turns, 6 statements, one superseded."""
    return chat_session(seed, turns=10, statements=6, updates=1)


def parts(messages: Sequence[Message], count: int = ROUNDS) -> list[tuple[Message, ...]]:
    """``messages`` cut into ``count`` parts of about equal length, each starting at a user
    message or an assistant message (never at a tool result, which answers the step
    before it); the first part holds the system prompt and the task. A conversation too
    short to cut leaves the last parts empty. A part ends where a model call would be made
    (after a user message or a tool result), which is when a trigger compacts."""
    starts = [i for i, m in enumerate(messages) if i > 1 and m.role in ("user", "assistant")]
    cuts = [0]
    for k in range(1, count):
        want = round(k * len(messages) / count)
        later = [s for s in starts if s > cuts[-1]]
        cuts.append(min(later, key=lambda s: abs(s - want)) if later else len(messages))
    cuts.append(len(messages))
    return [tuple(messages[a:b]) for a, b in itertools.pairwise(cuts)]


def _empty() -> dict[str, Any]:
    return {
        "kept": {k: [0, 0] for k in KINDS},
        "fit": [0, 0],
        "limited": [],
        "stale": [0, 0],
        "tokens": [0, 0],
        "use": [],
    }


_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
#: What a note that shows the person's words costs besides the words: its header and heading.
_FRAME: Final = "[Summary of 99 earlier messages]\nThe person said (verbatim, latest values):"


def _sentence(text: str, value: str) -> str:
    """The sentence of ``text`` that carries ``value`` (the statement as the person typed it)."""
    return next((s for s in _SENTENCE_END.split(text) if value in s), text)


def _request(text: str, values: Sequence[str]) -> str:
    """What a person's message keeps when its filler goes: its questions and the sentences
    that carry one of the session's ``values`` (the benchmark's own reading)."""
    kept = [
        s
        for s in _SENTENCE_END.split(text)
        if s.rstrip().endswith("?") or any(v in s for v in values)
    ]
    return " ".join(kept)


def capacity(
    session: Session,
    given: Sequence[Message],
    upto: int,
    target: int,
    counter: TokenCounter,
) -> int:
    """How many of the statements current before message ``upto`` any answer could show
    verbatim within ``target``, the benchmark's own bound (it reads nothing of the library's
    choices): what the product's protection rule keeps whole (the system prompt, the task,
    the newest message of the person in ``given``, the round's input, and the newest step:
    its last assistant message and what answers it) is paid first, with a note's bare frame;
    the other statements' sentences, one line each, cheapest first, in what is left; the
    statements in the newest message count as shown. When what the rule protects is itself
    over target, a last resort cuts it in the product's order: the newest step's text first
    (paid at its framing), the person's newest message only after every note gave its lines
    (so it is paid whole, as when all fits: a note's line never takes its place; a longer
    step never leaves the statements more room); when that is over target too, its filler
    goes before a note gives a line, and it is paid as its request (its questions and the
    sentences with a value). Only when even that is over target are just the system prompt
    and the task paid, every statement competing for the rest."""
    original = {m.content for m in session.messages if m.role == "user"}
    last = max(
        (i for i, m in enumerate(given) if m.role == "user" and m.content in original),
        default=len(given),
    )
    tail = "\n".join(m.content for m in given[last : last + 1])
    step = max((i for i, m in enumerate(given) if m.role == "assistant"), default=len(given))
    steps = given[max(step, last + 1) :]
    newest = [*given[last : last + 1], *steps]
    base = [m for m in given if m.role == "system"] + [session.messages[1]]
    fixed = [*base, *newest]
    room = target - sum(counter.count(m) for m in fixed)
    room -= counter.count(Message("user", _FRAME))
    current: dict[str, Any] = {}
    for statement in session.statements:
        if statement.index < upto:
            current[statement.subject] = statement
    if room < 0:
        # what the rule protects is itself over target: a last resort cuts the newest step's
        # text first (to its framing), and the person's newest message only after every note
        # gave its lines: so that message is still paid
        room = target - sum(counter.count(m) for m in [*base, *given[last : last + 1]])
        room -= len(steps) * counter.count(Message("assistant", ""))
        room -= counter.count(Message("user", _FRAME))
    if room < 0 and tail:
        # and over target with it whole: the person's filler goes before a note gives a line,
        # so their newest message is paid as its request (its questions and the sentences
        # with one of the session's values)
        values = [st.value for st in session.statements]
        request = Message("user", _request(tail, values))
        room += counter.count(given[last]) - counter.count(request)
    if room < 0:
        # even that is over target: the system prompt and the task only are paid, every
        # statement competes for what is left
        room = target - sum(counter.count(m) for m in base)
        room -= counter.count(Message("user", _FRAME))
        tail = ""
    shown = sum(1 for st in current.values() if st.value in tail)
    costs = sorted(
        counter.count_text("\n- " + _sentence(session.messages[st.index].content, st.value))
        for st in current.values()
        if st.value not in tail
    )
    for cost in costs:
        if cost > room:
            break
        room -= cost
        shown += 1
    return shown


def _judge(session: Session, out: Sequence[Message], upto: int, into: dict[str, Any]) -> None:
    """Add what survives in ``out`` of the statements made before message ``upto``."""
    text = visible_text(out)
    current: dict[str, Any] = {}
    for statement in session.statements:
        if statement.index < upto:
            current[statement.subject] = statement
    kept = 0
    for statement in current.values():
        tally = into["kept"][statement.kind]
        tally[0] += statement.value in text
        tally[1] += 1
        kept += statement.value in text
        if statement.supersedes is not None:
            into["stale"][0] += stale(text, statement.supersedes, statement.value)
            into["stale"][1] += 1
    into["fit"] = [kept, len(current)]


def run_session(
    session: Session,
    budget: float,
    counter: TokenCounter,
    *,
    grow: bool = True,
    ladder_name: str = "default",
) -> list[dict[str, Any]]:
    """One session at one budget: a tally per round (kept by kind, stale, tokens in/out, and
    the budget used by a round that started over target)."""
    total = counter.count_messages(session.messages)
    target = max(1, int(total * budget))
    pipeline = ladder(ladder_name, counter)
    pieces = parts(session.messages) if grow else [session.messages] + [()] * (ROUNDS - 1)
    carried: tuple[Message, ...] = ()
    seen = 0
    rounds = []
    for piece in pieces:
        seen += len(piece)
        before = carried
        result = pipeline.compact((*carried, *piece), target=target)
        carried = tuple(result.messages)
        tally = _empty()
        _judge(session, carried, seen, tally)
        # where not every statement can fit verbatim, the goal is all that fit
        can = min(tally["fit"][1], capacity(session, (*before, *piece), seen, target, counter))
        # what this answer shows within the target fits, whatever the bound says (it pays the
        # task whole, which a last resort may cut to its share)
        if result.after <= target:
            can = max(can, tally["fit"][0])
        if can < tally["fit"][1]:
            tally["limited"] = [f"seed {session.seed} ({can} of {tally['fit'][1]})"]
        tally["fit"] = [min(tally["fit"][0], can), can]
        tally["tokens"] = [result.after, target]
        if result.before > target:
            tally["use"] = [result.after / target]
        rounds.append(tally)
    return rounds


def _add(into: dict[str, Any], tally: dict[str, Any]) -> None:
    for kind in KINDS:
        for i in (0, 1):
            into["kept"][kind][i] += tally["kept"][kind][i]
    for i in (0, 1):
        into["stale"][i] += tally["stale"][i]
        into["fit"][i] += tally["fit"][i]
    into["limited"] = [*into.get("limited", []), *tally["limited"]]
    into["over"] = into.get("over", 0) + (tally["tokens"][0] > tally["tokens"][1])
    into["use"] = [*into.get("use", []), *tally["use"]]


def run(ctx: Any) -> dict[str, Any]:
    """Every counter, ladder, shape, seed and budget, both protocols (the fixed one for the
    default ladder by tiktoken); pooled tallies per counter/ladder/shape/budget/round."""
    seeds = QUICK_SEEDS if ctx.quick else SEEDS
    makers: dict[str, Callable[[int], Session]] = {
        "chat": chat_session,
        "agent": agent_session,
        "small": small_session,
    }
    growing: dict[str, Any] = {}
    fixed: dict[str, Any] = {}
    sizes: dict[str, list[list[int]]] = {shape: [] for shape in SHAPES}
    errors: list[str] = []
    for shape in SHAPES:
        progress(f"remembered: {shape} sessions, seeds {seeds[0]}-{seeds[-1]}")
        for seed in seeds:
            session = makers[shape](seed)
            sizes[shape].append(
                [
                    len(session.messages),
                    TiktokenCounter().count_messages(session.messages),
                    Chars().count_messages(session.messages),
                ]
            )
            for counter_name, ladder_name in itertools.product(COUNTERS, LADDERS):
                plans = [(True, growing)]
                if counter_name == "tokens" and ladder_name == "default":
                    plans.append((False, fixed))
                for budget in BUDGETS:
                    for grow, pool in plans:
                        counter = counter_for(counter_name)
                        try:
                            rounds = run_session(
                                session, budget, counter, grow=grow, ladder_name=ladder_name
                            )
                        except Exception as exc:  # a crash is a result, not the end
                            errors.append(
                                f"{counter_name} {ladder_name} {shape} seed {seed} at "
                                f"{budget:.0%}: {exc!r}"
                            )
                            continue
                        for r, tally in enumerate(rounds, 1):
                            key = f"{counter_name}|{ladder_name}|{shape}|{budget}|{r}"
                            _add(pool.setdefault(key, _empty()), tally)
    return {
        "seeds": list(seeds),
        "budgets": list(BUDGETS),
        "rounds": ROUNDS,
        "shapes": list(SHAPES),
        "counters": list(COUNTERS),
        "ladders": list(LADDERS),
        "kinds": list(KINDS),
        "growing": growing,
        "fixed": fixed,
        "sizes": sizes,
        "errors": errors,
        "goals": goals(growing),
    }


#: Done-when: share kept after round 5 at each budget; stale share at most this; the median
#: budget use of the rounds that started over target at least this.
KEEP_GOALS: Final = {0.30: 1.00, 0.20: 0.90, 0.10: 0.50}
STALE_GOAL: Final = 0.05
USE_GOAL: Final = 0.95


def kept_share(tally: dict[str, Any]) -> tuple[int, int]:
    kept = sum(v[0] for v in tally["kept"].values())
    total = sum(v[1] for v in tally["kept"].values())
    return kept, total


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def goals(growing: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals for the default ladder, judged per counter and shape after round 5
    (each must meet them), and over every round for the budget use."""
    out = []
    for budget, want in sorted(KEEP_GOALS.items(), reverse=True):
        shares = {}
        limited: list[str] = []
        for counter, shape in itertools.product(COUNTERS, SHAPES):
            tally = growing.get(f"{counter}|default|{shape}|{budget}|{ROUNDS}")
            if tally:
                kept, total = tally["fit"]
                shares[f"{shape} ({counter})"] = kept / total if total else float("nan")
                limited += [f"{shape} {s}, {counter}" for s in tally.get("limited", [])]
        out.append(
            {
                "goal": f"default ladder: statements kept after round {ROUNDS} at {budget:.0%}: "
                f"≥ {want:.0%} (of all that fit verbatim, where not all can)",
                "measured": " / ".join(f"{s} {v:.1%}" for s, v in shares.items()) or "n/a",
                "met": (all(v >= want for v in shares.values()) if shares else None),
            }
        )
        if limited:
            out[-1]["measured"] += "; not all fit in: " + ", ".join(limited)
    stale_n = stale_d = 0
    uses: list[float] = []
    for key, tally in growing.items():
        if "|default|" not in key:
            continue
        uses.extend(tally.get("use", []))
        if key.endswith(f"|{ROUNDS}"):
            stale_n += tally["stale"][0]
            stale_d += tally["stale"][1]
    out.append(
        {
            "goal": f"default ladder: superseded values presented as current after round "
            f"{ROUNDS}: ≤ {STALE_GOAL:.0%}",
            "measured": f"{stale_n} of {stale_d}"
            + (f" ({stale_n / stale_d:.1%})" if stale_d else ""),
            "met": (stale_n / stale_d <= STALE_GOAL) if stale_d else None,
        }
    )
    use = median(uses)
    out.append(
        {
            "goal": f"default ladder: budget use of every round that started over target, "
            f"median ≥ {USE_GOAL:.2f}",
            "measured": f"median {use:.2f}, min {min(uses):.2f} ({len(uses)} rounds)"
            if uses
            else "n/a",
            "met": (use >= USE_GOAL) if uses else None,
        }
    )
    return out


def markdown(results: dict[str, Any]) -> list[str]:
    from .report import section

    return section(results)
