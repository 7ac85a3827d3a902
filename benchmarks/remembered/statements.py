"""The statements a person plants in the ``remembered`` suite's sessions: typed (rule,
constraint, fact, preference, goal), each with an unguessable value drawn per seed (a code, a
name, an amount, a date, a path, a version), some superseded later by a new value of the
same subject. Kept apart from the sessions' filler so each module has one job.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Final

__all__ = ["KINDS", "Planted", "statements", "word"]

KINDS: Final = ("rule", "constraint", "fact", "preference", "goal")

#: (kind, subject, the sentence the person types, the value that must survive)
Planted = tuple[str, str, str, str]

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


def word(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def _name(rng: random.Random) -> str:
    return f"{word(rng, 2).capitalize()} {word(rng, 3).capitalize()}"


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
    return f"/srv/{word(rng, 2)}/{word(rng, 2)}_{rng.randint(10, 99)}/{word(rng)}.toml"


def _branch(rng: random.Random) -> str:
    return f"release/{word(rng, 2)}-{rng.randint(100, 999)}"


def _host(rng: random.Random) -> str:
    return f"{word(rng, 2)}-{rng.randint(10, 99)}.{word(rng, 2)}.internal"


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
        lambda r: word(r, 2) + str(r.randint(10, 99)),
    ),
    (
        "rule",
        "off-limits directory",
        "Don't touch anything under {v} — it is generated.",
        lambda r: f"vendor/{word(r, 2)}_{r.randint(100, 999)}/",
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
        lambda r: word(r).capitalize(),
    ),
    (
        "preference",
        "output file",
        "Please name the output file {v} every time.",
        lambda r: f"summary_{word(r, 2)}{r.randint(10, 99)}.csv",
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
        lambda r: word(r, 2) + "_",
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
        lambda r: word(r, 3).upper(),
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


def statements(rng: random.Random, count: int, updates: int) -> list[Planted]:
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
