"""Sessions in which the person plants typed statements, for the ``remembered`` suite.

The benchmark's own generator: it knows nothing of how the library decides what to keep.
Each seed gives a chat session and an agent run. In both the person states rules,
constraints, facts, preferences and goals, each carrying one *distinctive value* (a code,
a name, an amount, a date, a path, a version, drawn at random per seed, so no compactor can
guess it); some are later superseded (the same subject, a new value). Everything else is
filler: small talk, questions, long assistant answers, large tool outputs. The assistant
acknowledges a statement without repeating its value, so a value survives only where the
person's own words (or a note built from them) survive.

- **chat**: a system prompt, then ~65 user turns each answered by the assistant (~130
  messages); ~20 of the user turns are statements, 2 of them supersede an earlier one.
- **agent**: a system prompt, a task, then tool steps (an assistant call and a large tool
  output each) with the person's interjections between steps; ~14 interjections are
  statements, 2 of them superseding.

Everything is a pure function of the seed (``random.Random(seed)``), so every run of the
suite sees the same sessions.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from typing import Final

import attrs

from compaction import Message, ToolCall

__all__ = ["KINDS", "Session", "Statement", "agent_session", "chat_session"]

KINDS: Final = ("rule", "constraint", "fact", "preference", "goal")


@attrs.frozen
class Statement:
    """One thing the person said: its type, subject, distinctive value, and where.

    ``index`` is the position of the user message that states it; ``supersedes`` names the
    subject's earlier value when this statement replaces it (``None`` for a first statement).
    """

    kind: str
    subject: str
    value: str
    index: int
    supersedes: str | None = None


@attrs.frozen
class Session:
    """A generated conversation and the statements planted in it."""

    shape: str
    seed: int
    messages: tuple[Message, ...]
    statements: tuple[Statement, ...]


# -- unguessable values ------------------------------------------------------------------------

_SYLLABLES: Final = [
    "ka",
    "ro",
    "mi",
    "zu",
    "te",
    "va",
    "lo",
    "shi",
    "ne",
    "qua",
    "dor",
    "fen",
    "mar",
    "tis",
    "wel",
    "bri",
    "go",
    "sa",
    "nu",
    "pel",
    "vor",
    "yan",
    "ix",
    "ul",
    "tho",
    "ke",
    "ra",
]


def _word(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def _name(rng: random.Random) -> str:
    return f"{_word(rng, 2).capitalize()} {_word(rng, 3).capitalize()}"


def _code(rng: random.Random, prefix: str) -> str:
    tail = "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(5))
    return f"{prefix}-{rng.randint(100, 999)}{tail}"


def _money(rng: random.Random) -> str:
    return f"${rng.randint(1, 98)},{rng.randint(100, 999)}"


def _date(rng: random.Random) -> str:
    return f"20{rng.randint(27, 39)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _version(rng: random.Random) -> str:
    return f"{rng.randint(2, 19)}.{rng.randint(10, 49)}.{rng.randint(2, 97)}"


def _path(rng: random.Random) -> str:
    return f"/srv/{_word(rng, 2)}/{_word(rng, 2)}_{rng.randint(10, 99)}/{_word(rng)}.toml"


def _branch(rng: random.Random) -> str:
    return f"release/{_word(rng, 2)}-{rng.randint(100, 999)}"


def _host(rng: random.Random) -> str:
    return f"{_word(rng, 2)}-{rng.randint(10, 99)}.{_word(rng, 2)}.internal"


def _number(rng: random.Random, lo: int, hi: int, unit: str) -> str:
    return f"{rng.randint(lo, hi):,} {unit}"


# One template per subject: (kind, subject, sentence with {v}, value maker). The sentence is
# what the person types; the value is what must survive, literally.
Maker = Callable[[random.Random], str]
_TEMPLATES: Final[tuple[tuple[str, str, str, Maker], ...]] = (
    ("rule", "protected branch", "Never push directly to {v}; open a pull request.", _branch),
    (
        "rule",
        "lint command",
        "Always run `make check-{v}` before you commit anything.",
        lambda r: _word(r, 2) + str(r.randint(10, 99)),
    ),
    (
        "rule",
        "off-limits directory",
        "Don't touch anything under {v} — it is generated.",
        lambda r: f"vendor/{_word(r, 2)}_{r.randint(100, 999)}/",
    ),
    ("rule", "reviewer", "Every change must be reviewed by {v} before it merges.", _name),
    ("constraint", "budget cap", "The budget cap for this project is {v}, hard limit.", _money),
    ("constraint", "deadline", "The hard deadline is {v}; nothing ships after that.", _date),
    (
        "constraint",
        "memory limit",
        "The service must stay under {v} of memory.",
        lambda r: _number(r, 1100, 9900, "MiB"),
    ),
    (
        "constraint",
        "response length",
        "Keep every answer under {v}, no exceptions.",
        lambda r: _number(r, 110, 490, "words"),
    ),
    (
        "fact",
        "account id",
        "For the record, our customer account id is {v}.",
        lambda r: _code(r, "ACC"),
    ),
    ("fact", "staging host", "Our staging server is {v}, use that one.", _host),
    ("fact", "config path", "The configuration lives in {v} on the servers.", _path),
    ("fact", "library version", "We are pinned to version {v} of the ingest library.", _version),
    ("fact", "on-call engineer", "The on-call engineer this week is {v}.", _name),
    ("fact", "ticket", "This work is tracked in ticket {v}.", lambda r: _code(r, "OPS")),
    (
        "preference",
        "report signature",
        'I\'d like reports signed as "Team {v}", please.',
        lambda r: _word(r).capitalize(),
    ),
    (
        "preference",
        "output file",
        "Please name the output file {v} every time.",
        lambda r: f"summary_{_word(r, 2)}{r.randint(10, 99)}.csv",
    ),
    (
        "preference",
        "chart colour",
        "I prefer the colour {v} for every chart.",
        lambda r: "#" + "".join(r.choice("0123456789abcdef") for _ in range(6)),
    ),
    (
        "preference",
        "variable prefix",
        "I prefer variable names that start with {v}.",
        lambda r: _word(r, 2) + "_",
    ),
    (
        "goal",
        "latency goal",
        "Our goal is to bring p95 latency down to {v}.",
        lambda r: _number(r, 41, 389, "ms"),
    ),
    (
        "goal",
        "migration goal",
        "The goal this quarter is migrating {v} to the new cluster.",
        lambda r: _number(r, 1100, 9800, "tenants"),
    ),
    (
        "goal",
        "coverage goal",
        "We're aiming for test coverage of {v} by the end.",
        lambda r: f"{r.randint(61, 98)}.{r.randint(1, 9)}%",
    ),
    (
        "goal",
        "launch goal",
        "The launch we are working towards is codenamed {v}.",
        lambda r: _word(r, 3).upper(),
    ),
)

# Subjects whose value a person plausibly changes later.
_SUPERSEDABLE: Final = frozenset(
    {
        "budget cap",
        "deadline",
        "memory limit",
        "library version",
        "staging host",
        "on-call engineer",
        "protected branch",
        "output file",
        "latency goal",
        "reviewer",
    }
)

_UPDATES: Final = (
    "Change of plan: {s}",
    "Correction — {s}",
    "Update, this replaces what I said earlier: {s}",
    "Actually, scratch the earlier one. {s}",
)


def _statements(rng: random.Random, count: int, updates: int) -> list[tuple[str, str, str, str]]:
    """``count`` statements as (kind, subject, text, value); the last ``updates`` of them
    supersede an earlier subject and are placed after it by the caller."""
    firsts = count - updates
    # Every kind at least once, then the rest at random, each subject at most once.
    by_kind = {k: [t for t in _TEMPLATES if t[0] == k] for k in KINDS}
    chosen = [rng.choice(by_kind[k]) for k in KINDS]
    rest = [t for t in _TEMPLATES if t not in chosen]
    rng.shuffle(rest)
    chosen += rest[: max(0, firsts - len(chosen))]
    rng.shuffle(chosen)
    seen: set[str] = set()
    out = []
    for kind, subject, sentence, make in chosen:
        value = make(rng)
        while value in seen:
            value = make(rng)
        seen.add(value)
        out.append((kind, subject, sentence.format(v=value), value))
    candidates = [s for s in out if s[1] in _SUPERSEDABLE]
    for kind, subject, _, old in rng.sample(candidates, min(updates, len(candidates))):
        template = next(t for t in _TEMPLATES if t[1] == subject)
        value = template[3](rng)
        while value in seen or old in value or value in old:
            value = template[3](rng)
        seen.add(value)
        text = rng.choice(_UPDATES).format(s=template[2].format(v=value))
        out.append((kind, subject, text, value))
    return out


# -- filler ------------------------------------------------------------------------------------

_WORDS: Final = [
    "the",
    "system",
    "design",
    "approach",
    "request",
    "response",
    "handler",
    "cache",
    "layer",
    "queue",
    "worker",
    "service",
    "team",
    "process",
    "data",
    "model",
    "result",
    "option",
    "setting",
    "user",
    "client",
    "server",
    "network",
    "test",
    "code",
    "change",
    "review",
    "plan",
    "step",
    "detail",
    "example",
    "case",
    "method",
    "value",
    "field",
    "record",
    "page",
    "report",
    "question",
    "answer",
    "idea",
    "point",
    "issue",
    "reason",
    "context",
    "window",
    "budget",
    "time",
    "part",
    "way",
]
_VERBS: Final = [
    "handles",
    "checks",
    "keeps",
    "sends",
    "builds",
    "reads",
    "writes",
    "moves",
    "returns",
    "updates",
    "explains",
    "shows",
    "needs",
    "uses",
    "covers",
    "follows",
]
_FILLER_ASKS: Final = (
    "Can you explain that part again in simpler terms?",
    "Ok, thanks. What would you do next?",
    "Sounds good, carry on.",
    "How does that compare with the usual approach?",
    "Could you give me an example of that?",
    "Interesting. Why is that the case?",
    "Let's keep going with the next part.",
    "Hmm, I'm not sure I follow. Can you walk me through it?",
    "What are the trade-offs there?",
    "Nice. Anything I should watch out for?",
    "Please summarise where we are so far.",
    "Can you write that up as a short checklist?",
)
_ACKS: Final = (
    "Understood, I will keep that in mind from now on.",
    "Noted. I'll follow that for the rest of the work.",
    "Got it; I've taken that into account.",
    "Thanks for telling me, I'll respect that.",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
    words.insert(rng.randint(1, len(words) - 1), rng.choice(_VERBS))
    return " ".join(words).capitalize() + "."


def _around(rng: random.Random, core: str) -> str:
    """``core`` with zero to three filler sentences before it and up to one after."""
    before = " ".join(_sentence(rng) for _ in range(rng.randint(0, 3)))
    after = _sentence(rng) if rng.random() < 0.3 else ""
    return " ".join(part for part in (before, core, after) if part)


def _paragraphs(rng: random.Random, sentences: int) -> str:
    out, para = [], []
    for _ in range(sentences):
        para.append(_sentence(rng))
        if len(para) >= rng.randint(3, 6):
            out.append(" ".join(para))
            para = []
    if para:
        out.append(" ".join(para))
    return "\n\n".join(out)


_SYSTEM: Final = (
    "You are a careful assistant working with one person on a long project. Follow the "
    "person's rules and constraints, remember the facts they give you, respect their "
    "preferences, and keep their goals in view. Answer plainly. When unsure, ask."
)


def _place(
    rng: random.Random, slots: int, planted: list[tuple[str, str, str, str]], updates: int
) -> dict[int, int]:
    """Slot of each planted statement: firsts anywhere in the first 70% of the slots,
    updates after the statement they supersede (by subject)."""
    firsts = len(planted) - updates
    early = rng.sample(range(1, int(slots * 0.7)), firsts)
    where = dict(enumerate(early))
    free = sorted(set(range(1, slots)) - set(early))
    for i in range(firsts, len(planted)):
        subject = planted[i][1]
        first = next(j for j in range(firsts) if planted[j][1] == subject)
        later = [s for s in free if s > where[first] + 3] or [s for s in free if s > where[first]]
        slot = rng.choice(later)
        free.remove(slot)
        where[i] = slot
    return {slot: i for i, slot in where.items()}


def _record(planted: list[tuple[str, str, str, str]], i: int, index: int, firsts: int) -> Statement:
    kind, subject, _, value = planted[i]
    old = None
    if i >= firsts:
        old = next(planted[j][3] for j in range(firsts) if planted[j][1] == subject)
    return Statement(kind, subject, value, index, old)


def chat_session(seed: int, *, turns: int = 65, statements: int = 20, updates: int = 2) -> Session:
    """A chat: a system prompt and ``turns`` user turns, each answered by the assistant."""
    rng = random.Random(f"chat-{seed}")
    planted = _statements(rng, statements, updates)
    at = _place(rng, turns, planted, updates)
    messages = [Message("system", _SYSTEM)]
    recorded = []
    firsts = len(planted) - updates
    for turn in range(turns):
        if turn == 0:
            text = "Hi! We'll work on our project together over the next while. " + (
                rng.choice(_FILLER_ASKS)
            )
        elif turn in at:
            # A statement comes with some context around it, as people write.
            i = at[turn]
            text = _around(rng, planted[i][2])
            recorded.append(_record(planted, i, len(messages), firsts))
        else:
            text = _around(rng, rng.choice(_FILLER_ASKS))
        messages.append(Message("user", text))
        answer = _paragraphs(rng, rng.randint(4, 9))
        if turn in at:
            answer = rng.choice(_ACKS) + "\n\n" + answer
        messages.append(Message("assistant", answer))
    return Session("chat", seed, tuple(messages), tuple(recorded))


# -- agent runs ----------------------------------------------------------------------------------

_COMMANDS: Final = (
    "grep -rn '{w}' src/ | head -200",
    "cat src/{w}/handlers.py",
    "python -m pytest tests/test_{w}.py -x -q",
    "ls -la src/{w}",
    "git log --oneline -n 60 -- src/{w}",
    "sed -n '1,220p' src/{w}/models.py",
)


def _tool_output(rng: random.Random, lines: int) -> str:
    out = []
    for n in range(lines):
        shape = rng.random()
        if shape < 0.4:
            out.append(
                f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}: "
                f"def {rng.choice(_WORDS)}_{rng.choice(_WORDS)}(self, {rng.choice(_WORDS)}):"
            )
        elif shape < 0.7:
            out.append(
                f"    {rng.choice(_WORDS)} = self.{rng.choice(_WORDS)}."
                f"{rng.choice(_VERBS)}({rng.choice(_WORDS)}, {rng.randint(0, 99)})"
            )
        else:
            out.append(f"INFO {n:04d} " + _sentence(rng))
    return "\n".join(out)


def agent_session(
    seed: int, *, steps: int = 48, statements: int = 14, updates: int = 2, filler: int = 6
) -> Session:
    """An agent run: a system prompt, the task, ``steps`` tool steps with large outputs, and
    the person's interjections (``statements`` of them typed, ``filler`` not) between steps."""
    rng = random.Random(f"agent-{seed}")
    planted = _statements(rng, statements, updates)
    at = _place(rng, steps, planted, updates)
    chatter = set(rng.sample(sorted(set(range(1, steps)) - set(at)), filler))
    messages = [
        Message(
            "system",
            "You are a coding agent. Use the bash tool to inspect and change "
            "the repository; one command per call; stop when the task is done.",
        ),
        Message(
            "user",
            f"Please refactor the {_word(rng)} module so that its handlers share "
            "one cache, then make the test suite pass.",
        ),
    ]
    recorded = []
    firsts = len(planted) - updates
    for step in range(steps):
        if step in at:
            i = at[step]
            recorded.append(_record(planted, i, len(messages), firsts))
            messages.append(Message("user", _around(rng, planted[i][2])))
        elif step in chatter:
            messages.append(Message("user", _around(rng, rng.choice(_FILLER_ASKS))))
        call_id = f"call_{seed}_{step}"
        command = rng.choice(_COMMANDS).format(w=rng.choice(_WORDS))
        messages.append(
            Message(
                "assistant",
                _sentence(rng),
                tool_calls=(ToolCall(call_id, "bash", json.dumps({"command": command})),),
            )
        )
        messages.append(
            Message("tool", _tool_output(rng, rng.randint(25, 110)), tool_call_id=call_id)
        )
    messages.append(Message("assistant", "Done: " + _paragraphs(rng, 4)))
    return Session("agent", seed, tuple(messages), tuple(recorded))
