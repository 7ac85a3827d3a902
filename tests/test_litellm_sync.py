"""A synchronous ``litellm.completion`` cannot be compacted by a callback (LiteLLM runs no hook
that may change a synchronous request): the hook says so once, naming what to do, instead of
letting an over-window request go out in silence. Real LiteLLM, offline (``mock_response``)."""

from __future__ import annotations

import asyncio
import os
import warnings

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

from compaction.integrations.litellm import (  # noqa: E402
    CompactionHook,
    CompactionSyncWarning,
)


def _messages() -> list[dict[str, str]]:
    messages = [{"role": "user", "content": "Summarise the log."}]
    for n in range(40):
        messages += [
            {"role": "assistant", "content": f"reading {n}"},
            {"role": "user", "content": "log line\n" * 200},
        ]
    return messages


#: LiteLLM copies what is in ``callbacks`` into these lists as it runs: hooks of earlier tests
#: stay there and would warn as well, so each test starts with them empty and restores them.
_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)


@pytest.fixture
def installed():
    before = {name: getattr(litellm, name, None) for name in _LISTS}
    for name in _LISTS:
        if isinstance(before[name], list):
            setattr(litellm, name, [])
    hook = CompactionHook(window=8_000)
    litellm.callbacks = [hook]
    yield hook
    for name, value in before.items():
        if value is not None:
            setattr(litellm, name, value)


def _sync_warnings(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, CompactionSyncWarning)]


def test_a_synchronous_completion_warns_once_and_says_what_to_do(installed) -> None:
    def call() -> None:
        litellm.completion(model="openai/local-model", messages=_messages(), mock_response="ok")

    first = _sync_warnings(call)
    assert len(first) == 1
    assert "compact_messages" in str(first[0].message)
    assert _sync_warnings(call) == []  # once per hook, not once per call


def test_no_warning_when_the_caller_compacts_or_calls_async(installed) -> None:
    def small() -> None:
        messages = [{"role": "user", "content": "Hello."}]
        litellm.completion(model="openai/local-model", messages=messages, mock_response="ok")

    assert _sync_warnings(small) == []  # nothing to compact: nothing to say

    def compacted() -> None:
        messages = installed.compact_messages("openai/local-model", _messages())
        litellm.completion(model="openai/local-model", messages=messages, mock_response="ok")

    assert _sync_warnings(compacted) == []

    other = CompactionHook(window=8_000)
    litellm.callbacks = [other]

    def async_call() -> None:
        asyncio.run(
            litellm.acompletion(
                model="openai/local-model", messages=_messages(), mock_response="ok"
            )
        )

    assert _sync_warnings(async_call) == []
    assert other.stats.compactions == 1  # the async path is compacted, not merely quiet
