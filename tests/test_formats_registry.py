"""The reader registry and the rules every log reader shares: detection that names what it
considered, --format, no empty conversations, logs read as logs (split calls merged, mid-run
system messages and native compactions kept as boundaries), and the hand-made fixtures of the
formats with no public logs (Cline/Roo, OpenAI-style exports, the Claude Code web export)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.responses import from_responses, to_responses
from compaction.formats import FormatError, load
from compaction.formats.logs import as_log
from compaction.formats.registry import readers
from compaction.memory.transcript import is_note, is_person_written, is_synthetic
from compaction.messages import Message, ToolCall
from compaction.tokens import TiktokenCounter
from compaction.validate import validate

LOGS = Path(__file__).resolve().parent / "fixtures" / "formats" / "logs"


# --- detection, --format, empty files -----------------------------------------------------


def test_an_unknown_shape_names_every_format_considered(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"turns": [{"speaker": "me"}]}))
    with pytest.raises(FormatError) as err:
        load(path)
    considered = str(err.value).split("considered: ", 1)[1].split(".", 1)[0].split(", ")
    assert considered == [r.name for r in readers()]
    assert err.value.format is None


def test_format_forces_a_reader_and_an_error_names_it(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert load(path).format == "openai"
    assert load(path, format="openai-log").format == "openai-log"
    with pytest.raises(FormatError) as err:
        load(path, format="codex")
    assert err.value.format == "codex"
    assert "read as codex" in str(err.value)
    with pytest.raises(FormatError, match="no reader named 'nope'"):
        load(path, format="nope")


def test_a_file_with_no_messages_is_an_error_not_an_empty_conversation(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("[]")
    with pytest.raises(FormatError, match="yields no messages") as err:
        load(path)
    assert err.value.format == "openai"


def test_a_file_of_only_empty_messages_is_an_error_naming_the_format(tmp_path):
    # Messages whose text sits where the chat format does not look: read, they are empty.
    # (Under "message" it would be a Cursor transcript, which has its own reader.)
    path = tmp_path / "agent.jsonl"
    lines = [
        {"role": "user", "data": {"content": [{"type": "text", "text": "fix it"}]}},
        {"role": "assistant", "data": {"content": [{"type": "text", "text": "done"}]}},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(FormatError, match="every one of its 2 messages is empty") as err:
        load(path)
    assert err.value.format is not None


def test_only_harness_records_is_an_error_that_says_what_the_file_held(tmp_path):
    path = tmp_path / "session.jsonl"
    records = [{"type": "progress", "uuid": str(i), "sessionId": "s"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(FormatError, match="3 progress") as err:
        load(path)
    assert err.value.format == "claude-code"


# --- logs are read as logs -----------------------------------------------------------------


def _calls(n: int, prefix: str) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(f"{prefix}{i}", "f", "{}") for i in range(n))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6))
def test_split_parallel_calls_are_merged_back_into_the_message_that_made_them(sizes):
    whole: list[Message] = [Message("user", "go")]
    split: list[Message] = [Message("user", "go")]
    for step, n in enumerate(sizes):
        calls = _calls(n, f"s{step}c")
        whole.append(Message("assistant", f"step {step}", tool_calls=calls))
        split.append(Message("assistant", f"step {step}", tool_calls=calls[:1]))
        split += [Message("assistant", "", tool_calls=(c,)) for c in calls[1:]]
        results = [Message("tool", "ok", tool_call_id=c.id, name="f") for c in calls]
        whole += results
        split += results
    fixed, repairs = as_log(split)
    validate(fixed)
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in fixed] == [
        (m.role, m.content, m.tool_calls, m.tool_call_id) for m in whole
    ]
    assert sum(r.kind == "merged_calls" for r in repairs) == sum(n > 1 for n in sizes)


def test_an_openai_export_is_read_as_a_log():
    path = LOGS / "export" / "trajectory.json"
    raw = json.loads(path.read_text())
    loaded = load(path)
    assert loaded.format == "openai-log"
    validate(loaded.messages)
    raw_calls = [c["id"] for m in raw for c in m.get("tool_calls") or ()]
    assert [c.id for m in loaded.messages for c in m.tool_calls] == raw_calls
    answered = {m["tool_call_id"] for m in raw if m["role"] == "tool"}
    kinds = [r.kind for r in loaded.repairs]
    assert kinds.count("no_result") == len(set(raw_calls) - answered)
    # the mid-run system message: a marked user-role boundary, never the person's words
    mid = [i for i, m in enumerate(raw) if m["role"] == "system" and i > 0]
    boundaries = [m for m in loaded.messages if m.meta.get("boundary") == {"kind": "system"}]
    assert len(boundaries) == len(mid) == kinds.count("boundary")
    assert all(m.role == "user" and not is_person_written(m) for m in boundaries)
    assert all(raw[i]["content"] in b.content for i, b in zip(mid, boundaries, strict=True))
    # recorded usage and time of every call that has them
    with_usage = [m for m in raw if m["role"] == "assistant" and "usage" in m]
    recorded = [m.meta["recorded"] for m in loaded.messages if "recorded" in m.meta]
    assert [r["timestamp"] for r in recorded] == [m["timestamp"] for m in with_usage]
    # the same file as a request is refused, and the error says how to read it as a log
    with pytest.raises(FormatError, match="--format openai-log"):
        load(path, format="openai")


# --- Cline / Roo ----------------------------------------------------------------------------

_HEADER = re.compile(r"^\[([\w.:-]+)(?: for [^\n]*)?\] Result:")


@pytest.mark.parametrize("name", ["cline_tool_use", "cline_xml"])
def test_cline_results_answer_the_calls_and_are_not_the_persons_words(name):
    path = LOGS / f"{name}.api_conversation_history.json"
    raw = json.loads(path.read_text())
    headers = [
        _HEADER.match(b["text"])[1]
        for m in raw
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "text" and _HEADER.match(b["text"])
    ]
    uses = [b["id"] for m in raw for b in m["content"] if b["type"] == "tool_use"]
    loaded = load(path)
    assert loaded.format == "cline"
    validate(loaded.messages)
    results = [m for m in loaded.messages if m.role == "tool" and "repair" not in m.meta]
    assert [m.name for m in results] == headers
    calls = [c for m in loaded.messages for c in m.tool_calls]
    assert len(calls) == max(len(uses), len(headers))
    # no tool output and no environment block speaks as the person
    people = [m for m in loaded.messages if is_person_written(m)]
    assert people and all("] Result:" not in m.content for m in people)
    assert all(not m.content.startswith("<environment_details>") for m in people)
    assert people[0].content.startswith("<task>")
    env = [m for m in loaded.messages if m.content.startswith("<environment_details>")]
    assert env and all(is_synthetic(m) for m in env)


# --- native compaction, the web export ---------------------------------------------------


def test_the_claude_code_web_export_reads_as_the_same_session_as_its_jsonl(tmp_path):
    path = LOGS / "claude_web_export.json"
    lines = json.loads(path.read_text())["loglines"]
    jsonl = tmp_path / "session.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in lines))
    web, local = load(path), load(jsonl)
    assert (web.format, local.format) == ("claude-code-web", "claude-code")
    assert [(m.role, m.content, m.tool_calls) for m in web.messages] == [
        (m.role, m.content, m.tool_calls) for m in local.messages
    ]
    [summary] = [m for m in web.messages if is_note(m)]
    assert summary.meta["boundary"]["kind"] == "compaction"
    assert summary.meta["boundary"]["preTokens"] == 152000


def test_anthropic_compaction_blocks_and_openai_compaction_items_pass_through():
    anthropic = [
        {"role": "user", "content": "go on"},
        {
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "Earlier: the parser was fixed."},
                {"type": "text", "text": "Continuing."},
            ],
        },
    ]
    read = from_anthropic(anthropic)
    assert to_anthropic(read).messages == anthropic
    # its summary is input the next request pays for: counted, though it is not the text
    counter = TiktokenCounter()
    plain = Message("assistant", "Continuing.")
    assert counter.count(read[1]) >= counter.count(plain) + counter.count(
        Message("assistant", "Earlier: the parser was fixed.")
    ) - counter.count(Message("assistant", ""))
    items = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant", "content": "Continuing."},
    ]
    read_items = from_responses(items)
    assert to_responses(read_items) == items
    [boundary] = [m for m in read_items if "boundary" in m.meta]
    assert boundary.meta["responses"]["items"] == [items[1]]


# --- the command line ------------------------------------------------------------------------


def test_cli_lists_the_formats_and_forces_one(tmp_path, capsys):
    from tests.test_cli import call

    listing = call(capsys, "formats", "--json")
    assert listing.returncode == 0
    assert [r["name"] for r in json.loads(listing.stdout)] == [r.name for r in readers()]
    path = LOGS / "export" / "trajectory.json"
    found = call(capsys, "formats", str(path), "--json")
    assert json.loads(found.stdout)["format"] == "openai-log"
    assert json.loads(found.stdout)["considered"] == [r.name for r in readers()]
    strict = call(capsys, "count", str(path), "--format", "openai", "--counter", "approx")
    assert strict.returncode == 2 and "read as openai" in strict.stderr
    read = call(capsys, "count", str(path), "--counter", "approx", "--json")
    assert read.returncode == 0 and json.loads(read.stdout)["format"] == "openai-log"
    assert "repaired while reading" not in read.stdout
    unknown = call(capsys, "replay", str(path), "--window", "900", "--format", "nope")
    assert unknown.returncode == 2 and "the formats are:" in unknown.stderr


def test_a_codex_rollout_of_every_record_kind(tmp_path):
    def line(t: str, kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": t, "type": kind, "payload": payload}) + "\n"

    def usage(inp: int, cached: int, out: int) -> dict:
        last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out}
        return {"type": "token_count", "info": {"last_token_usage": last}}

    ENV = "<environment_context>cwd=/r</environment_context>"
    text = "".join(
        [
            line("T0", "session_meta", {"id": "s", "instructions": "You are Codex."}),
            line("T1", "turn_context", {"model": "gpt-5-codex"}),
            line("T2", "response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": ENV}]}),
            line("T3", "response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Bump the version"}]}),
            line("T4", "event_msg", usage(900, 0, 50)),  # older Codex: before the items
            line("T5", "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                         "input": "*** Begin Patch", "call_id": "p1"}),
            line("T6", "response_item", {"type": "custom_tool_call_output", "call_id": "p1",
                                         "output": "Done"}),
            line("T7", "response_item", {"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "Approval policy changed."}]}),
            line("T8", "response_item", {"type": "function_call", "name": "shell",
                                         "arguments": "{}", "call_id": "c2"}),
            line("T9", "event_msg", usage(1000, 896, 20)),  # newer Codex: after them
            line("T10", "event_msg", {"type": "agent_message", "message": "..."}),
        ]
    )  # fmt: skip
    path = tmp_path / "rollout-1.jsonl"
    path.write_text(text)
    loaded = load(path)
    assert loaded.format == "codex"
    roles = [m.role for m in loaded.messages]
    assert roles == ["system", "user", "user", "assistant", "tool", "user", "assistant", "tool"]
    assert is_synthetic(loaded.messages[1]) and is_person_written(loaded.messages[2])
    assert loaded.messages[5].meta["boundary"] == {"kind": "system"}
    recorded = [m.meta["recorded"] for m in loaded.messages if m.role == "assistant"]
    assert [r["usage"]["cache_read"] for r in recorded] == [0, 896]
    assert [r["usage"]["uncached"] for r in recorded] == [900, 104]
    assert [r["timestamp"] for r in recorded] == ["T5", "T8"]
    assert {r["model"] for r in recorded} == {"gpt-5-codex"}
    assert [r.kind for r in loaded.repairs] == ["boundary", "no_result"]
    assert loaded.skipped == {"event_msg agent_message": 1}
