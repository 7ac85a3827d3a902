"""A missing context window is refused the same way by every drop-in: one exception type
(``MissingWindowError``, a ``ValueError``) and one message, raised before anything is sent,
each with the real framework and its own fake model."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from compaction.integrations._compactor import MISSING_WINDOW, MissingWindowError

TASK = "Fix the parser."


def _langchain() -> BaseException:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from compaction.integrations.langchain import CompactionMiddleware

    model = GenericFakeChatModel(messages=iter([AIMessage("done")]))
    agent = create_agent(model, [], middleware=[CompactionMiddleware()])
    with pytest.raises(Exception) as caught:
        agent.invoke({"messages": [HumanMessage(TASK)]})
    return caught.value


def _pydantic_ai() -> BaseException:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from compaction.integrations.pydantic_ai import Compaction

    with pytest.raises(Exception) as caught:
        Agent(TestModel(), capabilities=[Compaction()]).run_sync(TASK)
    return caught.value


def _agents_sdk() -> BaseException:
    pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter, CompactionSession

    with pytest.raises(Exception) as caught:
        CompactionFilter()
    with pytest.raises(MissingWindowError):
        CompactionSession(_Session())
    return caught.value


class _Session:
    session_id = "s"

    async def get_items(self, limit=None):
        return []

    async def add_items(self, items):
        return None

    async def pop_item(self):
        return None

    async def clear_session(self):
        return None


def test_one_type_and_one_message_everywhere() -> None:
    errors = [_langchain(), _pydantic_ai(), _agents_sdk()]
    assert [type(e) for e in errors] == [MissingWindowError] * 3
    assert {str(e) for e in errors} == {MISSING_WINDOW}
    assert all(isinstance(e, ValueError) for e in errors)  # what callers caught before


def test_litellm_says_the_same_naming_the_model() -> None:
    pytest.importorskip("litellm")
    from compaction.integrations.litellm import CompactionHook

    hook = CompactionHook()
    data = {"model": "openai/unknown-model-x", "messages": [{"role": "user", "content": TASK}]}
    with pytest.raises(MissingWindowError) as caught:
        asyncio.run(hook.async_pre_call_deployment_hook(data, "completion"))
    assert str(caught.value).startswith(MISSING_WINDOW)
    assert "unknown-model-x" in str(caught.value)
