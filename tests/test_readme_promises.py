"""What the README promises about the library, held to it (issue 13's new-user mismatches)."""

from __future__ import annotations

import asyncio

import pytest

import compaction
from compaction import CompactionPipeline, Summary
from compaction.messages import assistant, system, user
from compaction.tokens import ApproximateCounter


def test_problems_is_importable_as_documented():
    from compaction import InvalidConversationError, is_valid, problems, validate

    bad = [system("s"), user("hi"), system("late")]
    found = problems(bad)
    assert found and all(isinstance(p, InvalidConversationError) for p in found)
    assert not is_valid(bad) and problems([user("hi")]) == []
    with pytest.raises(InvalidConversationError):
        validate(bad)
    assert "problems" in compaction.__all__


async def _async_summariser(transcript: str, instructions: str) -> str:
    return "## Objective\nasync summary"


def _conversation():
    msgs = [system("s")]
    for t in range(4):
        msgs += [user(f"task {t} " + "u" * 400), assistant(f"done {t} " + "a" * 400)]
    return msgs


def test_compact_refuses_an_async_summariser_with_a_clear_type_error():
    counter = ApproximateCounter()
    msgs = _conversation()
    strategy = Summary(_async_summariser)
    # strict=False (the default): the conversation is kept, the TypeError is the failure.
    result = CompactionPipeline().run(strategy).compact(msgs, target=200, counter=counter)
    assert result.messages == tuple(msgs)
    [failure] = result.failures
    assert isinstance(failure.error, TypeError) and "acompact" in str(failure.error)
    assert strategy.failures == 0  # a programming error, not a summariser failure
    # strict=True raises it.
    with pytest.raises(TypeError, match="acompact"):
        CompactionPipeline(strict=True).run(strategy).compact(msgs, target=200, counter=counter)
    # acompact awaits it.
    result = asyncio.run(
        CompactionPipeline().run(strategy).acompact(msgs, target=200, counter=counter)
    )
    assert result.changed


def test_plural_in_the_summary_explanation():
    assert "after 1 failed run in a row" in Summary(max_failures=1).explain()
    assert "after 3 failed runs in a row" in Summary(max_failures=3).explain()
