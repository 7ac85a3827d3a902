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
from typing import Final

import attrs

from compaction import Message, ToolCall

from .statements import KINDS, Planted, word
from .statements import statements as plant

__all__ = ["KINDS", "Session", "Statement", "agent_session", "chat_session"]


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


def _place(rng: random.Random, slots: int, planted: list[Planted], updates: int) -> dict[int, int]:
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


def _record(planted: list[Planted], i: int, index: int, firsts: int) -> Statement:
    kind, subject, _, value = planted[i]
    old = None
    if i >= firsts:
        old = next(planted[j][3] for j in range(firsts) if planted[j][1] == subject)
    return Statement(kind, subject, value, index, old)


def chat_session(seed: int, *, turns: int = 65, statements: int = 20, updates: int = 2) -> Session:
    """A chat: a system prompt and ``turns`` user turns, each answered by the assistant."""
    rng = random.Random(f"chat-{seed}")
    planted = plant(rng, statements, updates)
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
    planted = plant(rng, statements, updates)
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
            f"Please refactor the {word(rng)} module so that its handlers share "
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
