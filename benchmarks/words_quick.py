"""A quick measure of what the person said surviving repeated compaction (issue 19).

Stand-in until the `remembered` benchmark lands: chat sessions of a system prompt and 65 user
turns (each answered), 20 of them typed statements with unguessable values among filler, two
values superseded later. Each session is fed in five parts; after each part the conversation so
far is compacted by the default ladder to a fixed share of the whole original (10/20/30%), so
rounds 2-5 compact what earlier rounds left. A statement is kept when its value is literally in
the compacted messages; a stale value is "presented as current" when it is there and the value
that replaced it is not, or appears only before it.

Run: ``PYTHONPATH=$PWD python -m benchmarks.words_quick [seeds]``.
"""

from __future__ import annotations

import random
import string
import sys
from collections import defaultdict

from compaction import assistant, default_pipeline, system, user
from compaction.messages import Message
from compaction.tokens import default_counter

_WORDS = [
    "system",
    "design",
    "latency",
    "cache",
    "queue",
    "service",
    "deploy",
    "metric",
    "cluster",
    "schema",
    "index",
    "replica",
    "shard",
    "migration",
    "rollout",
    "feature",
    "flag",
    "config",
    "pipeline",
    "artifact",
    "release",
    "branch",
    "review",
    "test",
    "coverage",
    "budget",
    "vendor",
    "contract",
    "roadmap",
    "quarter",
    "team",
    "customer",
    "ticket",
    "incident",
    "postmortem",
    "runbook",
    "alert",
    "dashboard",
    "capacity",
    "storage",
    "network",
    "gateway",
    "endpoint",
    "token",
    "session",
    "backup",
]
_FILLER = [
    "Thanks, that makes sense.",
    "Can you explain that a bit more?",
    "Interesting, go on.",
    "ok",
    "What would you suggest next?",
    "Hmm, I am not sure about that part.",
    "Great, thanks!",
    "Could you give me an example?",
    "Let me think about it.",
    "Sounds reasonable to me.",
]


def _code(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_uppercase, k=2)) + "-" + str(rng.randint(1000, 9999))


def _name(rng: random.Random) -> str:
    return rng.choice(["Ilse", "Tomas", "Rafa", "Mirela", "Oskar", "Dagny", "Ifeoma", "Kenji"]) + (
        rng.choice(["", "n", "ka"]) + str(rng.randint(10, 99))
    )


def _statements(rng: random.Random) -> list[tuple[str, str, str]]:
    """(type, sentence, value) for 18 fixed templates plus the two that get superseded."""
    c = [_code(rng) for _ in range(12)]
    n = [rng.randint(120, 9800) for _ in range(6)]
    out = [
        ("rule", f"Never push directly to the rel-{c[0].lower()} branch.", f"rel-{c[0].lower()}"),
        ("rule", f"Always tag release notes with {c[1]}.", c[1]),
        ("rule", f"Don't touch the legacy module {c[2]} under any circumstances.", c[2]),
        ("rule", f"You must run the {c[3]} checklist before each deploy.", c[3]),
        ("constraint", f"Keep every answer under {n[0]} words.", str(n[0])),
        (
            "constraint",
            f"We can only use region eu-{c[4].lower()} for storage.",
            f"eu-{c[4].lower()}",
        ),
        ("constraint", f"At most {n[1]} requests per minute hit the vendor API.", str(n[1])),
        ("fact", f"The staging database is called {c[5]}.", c[5]),
        ("fact", f"Our account number at the vendor is {n[2]}-{n[3]}.", f"{n[2]}-{n[3]}"),
        ("fact", f"The on-call engineer this week is {_name(rng)}.", ""),
        (
            "fact",
            f"The config lives in deploy/{c[6].lower()}/values.yaml.",
            f"deploy/{c[6].lower()}/values.yaml",
        ),
        ("preference", f"I prefer the {c[7]} naming scheme for services.", c[7]),
        ("preference", f"I prefer reports in the {c[8]} template.", c[8]),
        ("goal", f"Our goal this sprint is to migrate {n[4]} services.", str(n[4])),
        ("goal", f"The milestone {c[9]} is done, next is {c[10]}.", c[10]),
        (
            "goal",
            f"We want version 4.{n[5] % 97}.{n[5] % 13} shipped.",
            f"4.{n[5] % 97}.{n[5] % 13}",
        ),
        ("fact", f"The incident ticket is {c[11]}.", c[11]),
        ("rule", f"Only use the {c[0][:2]}Q queue for batch jobs.", f"{c[0][:2]}Q"),
    ]
    # the value of the on-call fact is the name itself
    name_sentence = out[9][1]
    out[9] = ("fact", name_sentence, name_sentence.rsplit(" ", 1)[1].rstrip("."))
    return out


def session(seed: int) -> tuple[list[Message], list[dict]]:
    """One chat session and its planted statements (value, type, stale value, when)."""
    rng = random.Random(seed)
    planted = _statements(rng)
    budget_old, budget_new = rng.randint(2000, 4999), rng.randint(5000, 9999)
    day_old, day_new = rng.randint(1, 14), rng.randint(15, 28)
    turns: list[str | None] = [None] * 65
    slots = rng.sample(range(2, 40), 20)
    facts: list[dict] = []
    for (kind, sentence, value), slot in zip(planted, slots[:18], strict=True):
        turns[slot] = sentence
        facts.append({"type": kind, "value": value, "stale": None})
    turns[slots[18]] = f"The budget cap is ${budget_old:,} for this quarter."
    turns[slots[19]] = f"The deadline is 2025-03-{day_old:02d}."
    later = rng.sample(range(45, 60), 2)
    turns[later[0]] = f"Update: the budget cap is now ${budget_new:,}."
    turns[later[1]] = f"We moved the deadline to 2025-03-{day_new:02d}."
    facts.append({"type": "constraint", "value": f"${budget_new:,}", "stale": f"${budget_old:,}"})
    facts.append(
        {"type": "constraint", "value": f"2025-03-{day_new:02d}", "stale": f"2025-03-{day_old:02d}"}
    )
    msgs: list[Message] = [system("You are a helpful planning assistant for a software team.")]
    for i, planted_text in enumerate(turns):
        if i == 0:
            text = "Help me plan the platform migration for our team this quarter."
        elif planted_text is not None:
            text = planted_text
            if rng.random() < 0.5:
                text = rng.choice(_FILLER) + " " + text
        else:
            text = rng.choice(_FILLER)
        msgs.append(user(text))
        reply = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(50, 130)))
        msgs.append(assistant(reply.capitalize() + "."))
    return msgs, facts


def _present(messages: list[Message], fact: dict) -> tuple[bool, bool]:
    texts = [m.content for m in messages]
    where_new = [i for i, t in enumerate(texts) if fact["value"] in t]
    kept = bool(where_new)
    stale = False
    if fact["stale"]:
        where_old = [i for i, t in enumerate(texts) if fact["stale"] in t]
        stale = bool(where_old) and (not where_new or max(where_new) < max(where_old))
    return kept, stale


def _filler_turns(rng: random.Random, n: int) -> list[Message]:
    out: list[Message] = []
    for _ in range(n):
        out.append(user(rng.choice(_FILLER)))
        out.append(assistant(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(50, 130)))))
    return out


def run(seeds: int = 8, mode: str = "parts") -> None:
    """``parts``: the session fed in five parts, compacted after each; ``whole``: the whole
    session compacted, then four more rounds each adding six filler turns."""
    counter = default_counter()
    for pct in (0.10, 0.20, 0.30):
        by_round: dict[int, list[bool]] = defaultdict(list)
        by_type: dict[str, list[bool]] = defaultdict(list)
        stale_rate: list[bool] = []
        for seed in range(seeds):
            msgs, facts = session(seed)
            target = int(counter.count_messages(msgs) * pct)
            ladder = default_pipeline(counter=counter)
            if mode == "parts":
                parts = [msgs[1 + 26 * k : 1 + 26 * (k + 1)] for k in range(5)]
                parts[-1] = msgs[1 + 26 * 4 :]
            else:
                rng = random.Random(seed + 1000)
                parts = [msgs[1:]] + [_filler_turns(rng, 6) for _ in range(4)]
            current = [msgs[0]]
            for r, part in enumerate(parts, 1):
                current = list(ladder.compact([*current, *part], target=target).messages)
                for fact in facts:
                    kept, stale = _present(current, fact)
                    by_round[r].append(kept)
                    if r == 5:
                        by_type[fact["type"]].append(kept)
                        if fact["stale"]:
                            stale_rate.append(stale)
        print(
            f"budget {pct:.0%}: kept after round 5 {sum(by_round[5]) / len(by_round[5]):.0%}; "
            f"stale presented {sum(stale_rate) / len(stale_rate):.0%}"
        )
        print(
            "  by round: "
            + ", ".join(f"r{r} {sum(v) / len(v):.0%}" for r, v in sorted(by_round.items()))
        )
        print(
            "  by type: "
            + ", ".join(f"{k} {sum(v) / len(v):.0%}" for k, v in sorted(by_type.items()))
        )


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 8, sys.argv[2] if len(sys.argv) > 2 else "parts")
