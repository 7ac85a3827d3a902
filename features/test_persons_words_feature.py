"""Steps for features/persons_words.feature: the person's words at tight budgets, counted in
characters (as a character budget would be), through the default ladder."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import default_pipeline, events
from compaction.memory.note import ledger_cap
from compaction.memory.transcript import is_note
from compaction.messages import assistant, system, user
from compaction.tokens import CachingCounter

scenarios("persons_words.feature")


@pytest.fixture
def world():
    return {}


#: Distinct subjects with unguessable values (none supersedes another).
SAID = [
    ("rule", "RULE: Never touch the {s} module without the phrase {v}."),
    ("rule", "LIMIT: The {s} budget is capped at {v} credits and must never be exceeded."),
    ("fact", "FACT: The {s} database host is db-{v}.internal."),
    ("goal", "GOAL: Ship the {s} migration, code {v}, before the review."),
]
SUBJECTS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
FILLER = ["Looking at the ingestion module now.", "Checking the dashboards again."]


class Chars(CachingCounter):
    name = "chars"
    per_message = 12
    per_name = 0
    per_tool_call = 0

    def count_text(self, text: str) -> int:
        return len(text)


@given("a chat session of 65 short turns where 12 carry the person's rules, facts and goals")
def session(world):
    msgs = [system("You are a coding assistant. Follow every rule in this session.")]
    planted = {3 + 5 * i: i for i in range(12)}
    said = []
    for turn in range(65):
        if turn in planted:
            i = planted[turn]
            kind, pattern = SAID[i % 4]
            value = "".join("QWXZKRTPLMNV"[(i * 7 + k * 3) % 12] for k in range(5))
            text = pattern.format(s=SUBJECTS[i % 6] + str(i // 6 or ""), v=value)
            said.append((kind, text, value))
        else:
            text = FILLER[turn % 2]
        msgs += [user(text), assistant("Noted. Continuing.")]
    world["messages"], world["said"] = msgs, said


@given("a counter of characters")
def chars(world):
    world["counter"] = Chars


def _text(world):
    return "\n".join(m.content for m in world["result"].messages)


@when(parsers.parse("the default ladder compacts it to {percent:d}% of its size"))
def compact(world, percent):
    size = world["counter"]().count_messages(world["messages"])
    world["target"] = size * percent // 100
    world["result"] = default_pipeline().compact(
        world["messages"], target=world["target"], counter=world["counter"]()
    )


@when("the README's first example compacts the shipped agent session to 1,000 tokens")
def readme_example(world, caplog):
    from compaction.formats import load

    failed = world["failed"] = []

    def on_failed(sender, **kw):
        failed.append(kw)

    path = Path(__file__).resolve().parents[1] / "compaction" / "examples" / "agent_session.json"
    with events.failed.connected_to(on_failed), caplog.at_level(logging.DEBUG):
        world["result"] = default_pipeline().compact(load(path).messages, target=1_000)
    world["records"] = list(caplog.records)


@then("the result fits the target")
def fits(world):
    assert world["result"].fits


@then(parsers.parse("at least {n:d} of the 12 statements are shown verbatim"))
def shown(world, n):
    text = _text(world)
    assert sum(1 for _, said, _ in world["said"] if said in text) >= n


@then("every ledger line the model reads is one of the person's statements, whole")
def whole(world):
    said = {text for _, text, _ in world["said"]}
    for message in world["result"].messages:
        if not is_note(message):
            continue
        lines = message.content.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("The person")), None)
        if start is None:
            continue
        for line in lines[start + 1 :]:
            if not line.startswith("- "):
                break
            assert line[2:] in said, line


@then("the result uses at least 90% of the target")
def uses_budget(world):
    assert world["result"].budget_use >= 0.9, world["result"].budget_use


@then("no goal is shown while a rule is hidden")
def priority(world):
    text = _text(world)
    hidden_rule = any(k == "rule" and s not in text for k, s, _ in world["said"])
    shown_goal = any(k == "goal" and s in text for k, s, _ in world["said"][:-1])
    assert not (hidden_rule and shown_goal)


@then("the ledger's cap at 10% of the session in characters is at most half of that budget")
def cap(world):
    budget = world["counter"]().count_messages(world["messages"]) // 10
    assert ledger_cap(budget, chars_per_token=1) <= budget // 2


@then(parsers.parse('the sliding window\'s answer was set aside with the reason "{reason}"'))
def set_aside(world, reason):
    assert ("sliding_window", reason) in [(d.strategy, d.reason) for d in world["result"].declined]


@then("the summary's answer was taken")
def summary_taken(world):
    assert [a.strategy for a in world["result"].applied] == ["summary"]


@then("no warning was logged")
def no_warning(world):
    assert not [r for r in world["records"] if r.levelno >= logging.WARNING]


@then("no failure event was emitted")
def no_failure(world):
    assert world["failed"] == []


@then("the layers that declined are listed with their reasons")
def skipped(world):
    result = world["result"]
    assert result.failures == ()
    assert all(d.reason for d in result.skipped)
