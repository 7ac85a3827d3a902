"""The Continue reader against session files built here in the shape Continue saves them
(``~/.continue/sessions/<id>.json``: the extension's and the ``cn`` CLI's), read through
``compaction.formats.load`` and through the CLI, and under hostile input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats.logs import BOUNDARY_KEY, RECORDED_KEY
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_note, is_person_written, is_synthetic, parse
from compaction.validate import problems, validate
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all


def user(text: str, *context: tuple[str, str]) -> dict[str, Any]:
    items = [
        {
            "name": name,
            "description": name,
            "content": body,
            "id": {"providerTitle": "file", "itemId": name},
        }
        for name, body in context
    ]
    return {
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "contextItems": items,
    }


def tool_call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def assistant(
    text: str, *calls: dict[str, Any], states: list[dict[str, Any]] | None = None, **more: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["toolCalls"] = list(calls)
    message.update(more)
    item: dict[str, Any] = {"message": message, "contextItems": []}
    if states is not None:
        item["toolCallStates"] = states
    return item


def state(call: dict[str, Any], how: str, /, *outputs: str, **more: Any) -> dict[str, Any]:
    """A call's state; ``more`` goes on each output item (the terminal tool's ``status``)."""
    output = [{"name": "Result", "description": "", "content": o, **more} for o in outputs]
    found = {"toolCallId": call["id"], "toolCall": call, "status": how, "parsedArgs": {}}
    return {**found, "output": output} if outputs else found


def tool_item(cid: str, text: str) -> dict[str, Any]:
    return {"message": {"role": "tool", "content": text, "toolCallId": cid}, "contextItems": []}


def saved(history: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "sessionId": "0f4e5a1c-7d2b-4c1e-9b7a-2e3f4a5b6c7d",
        "title": "Timezone bug",
        "workspaceDirectory": "file:///home/dev/app",
        "history": history,
        **more,
    }


TERMINAL = tool_call("tc_1", "run_terminal_command", command="pytest -q")
READ = tool_call("tc_2", "read_file", filepath="src/dates.py")


def extension_session() -> dict[str, Any]:
    """What the VS Code extension saves: the person's question with the open file attached, a
    thinking item, a reply with a terminal call (state and tool item both hold its result), a
    reply whose read the session never ran. A fresh copy each time (tests change it)."""
    made = saved(
        [
            user("Why does the date parser drop the timezone?", ("dates.py", "def parse(s): ...")),
            {
                "message": {"role": "thinking", "content": "Run the tests first."},
                "contextItems": [],
            },
            assistant(
                "Let me run the tests.",
                TERMINAL,
                states=[state(TERMINAL, "done", "1 failed", status="exit code 1")],
                usage={
                    "prompt_tokens": 9000,
                    "completion_tokens": 35,
                    "prompt_tokens_details": {"cached_tokens": 8000},
                },
            ),
            tool_item("tc_1", "1 failed"),
            assistant("", READ, states=[state(READ, "generated")]),
        ],
        chatModelTitle="GPT-5",
        usage={"totalCost": 0.02, "promptTokens": 9000, "completionTokens": 35},
    )
    copied: dict[str, Any] = json.loads(json.dumps(made))
    return copied


def write(tmp_path: Path, session: dict[str, Any], name: str = "0f4e5a1c.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(session, indent=2))
    return path


def test_a_session_reads_as_its_turns(tmp_path: Path) -> None:
    loaded = load(write(tmp_path, extension_session()))
    assert loaded.format == "continue"
    assert [m.role for m in loaded.messages] == [
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    attached, asked, reply, result, second, missing = loaded.messages
    assert attached.content == "def parse(s): ..." and is_synthetic(attached)
    assert attached.meta["continue"]["contextItems"] == ["dates.py"]
    assert asked.content == "Why does the date parser drop the timezone?" and is_person_written(
        asked
    )
    assert [(c.id, c.name) for c in reply.tool_calls] == [("tc_1", "run_terminal_command")]
    assert json.loads(reply.tool_calls[0].arguments) == {"command": "pytest -q"}
    assert reply.meta["continue"]["thinking"] == ["Run the tests first."]
    # The terminal tool's result carries each output's status, as Continue sends it.
    assert (result.tool_call_id, result.content) == ("tc_1", "1 failed\n[Status: exit code 1]")
    assert (second.tool_calls[0].id, missing.tool_call_id, missing.content) == (
        "tc_2",
        "tc_2",
        NO_RESULT,
    )
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "tc_2")]
    assert loaded.skipped == {"tool item its call's state already answered": 1}
    validate(loaded.messages)


def test_the_task_is_what_the_person_typed_not_the_ide_context(tmp_path: Path) -> None:
    session = extension_session()
    session["history"].append(user("", ("terminal", "$ pytest\n1 failed")))
    loaded = load(write(tmp_path, session))
    transcript = parse(loaded.messages)
    assert transcript.task is not None and transcript.anchor == transcript.task
    task = transcript.messages[transcript.groups[transcript.task].start]
    assert task.content == "Why does the date parser drop the timezone?"
    assert loaded.messages[-1].content == "$ pytest\n1 failed" and is_synthetic(loaded.messages[-1])


def test_recorded_usage_follows_the_provider_and_the_session_total_stays_apart(
    tmp_path: Path,
) -> None:
    session = extension_session()
    anthropic = {
        "prompt_tokens": 200,
        "completion_tokens": 10,
        "prompt_tokens_details": {
            "cached_tokens": 5000,
            "cache_read_tokens": 5000,
            "cache_write_tokens": 300,
        },
    }
    session["history"].append(user("And the fix?"))
    session["history"].append(assistant("Use aware datetimes.", usage=anthropic))
    loaded = load(write(tmp_path, session))
    openai, claude = (
        m.meta[RECORDED_KEY]["usage"] for m in loaded.messages if RECORDED_KEY in m.meta
    )
    assert openai == {"cache_read": 8000, "cache_write": 0, "uncached": 1000, "output": 35}
    assert claude == {"cache_read": 5000, "cache_write": 300, "uncached": 200, "output": 10}
    assert loaded.extra["session"]["usage"]["totalCost"] == 0.02
    assert sum(RECORDED_KEY in m.meta for m in loaded.messages) == 2


def test_cancelled_errored_and_tool_item_results(tmp_path: Path) -> None:
    ls, grep, edit = (
        tool_call(c, n) for c, n in (("a", "ls"), ("b", "grep_search"), ("c", "edit_existing_file"))
    )
    session = saved(
        [
            user("Tidy the imports."),
            assistant(
                "",
                ls,
                grep,
                edit,
                states=[state(ls, "canceled"), state(grep, "errored"), state(edit, "done")],
            ),
            tool_item("c", "Edited src/app.py"),
        ]
    )
    loaded = load(write(tmp_path, session))
    results = {m.tool_call_id: m.content for m in loaded.messages if m.role == "tool"}
    assert results == {
        "a": "The user cancelled this tool call.",
        "b": "There was an error calling the tool.",
        "c": "Edited src/app.py",
    }
    assert loaded.repairs == ()


def test_system_items_are_skipped(tmp_path: Path) -> None:
    notice = {
        "message": {"role": "system", "content": "Chat history auto-compacted."},
        "contextItems": [],
    }
    loaded = load(write(tmp_path, saved([user("Hi"), notice, assistant("Hello.")])))
    assert [m.content for m in loaded.messages] == ["Hi", "Hello."]
    assert loaded.skipped == {"system item (Continue does not send it)": 1}


def test_the_extensions_summary_is_kept_as_a_native_compaction(tmp_path: Path) -> None:
    summarized = assistant("Parser fixed.")
    summarized["conversationSummary"] = "The person asked about timezones; the parser was fixed."
    session = saved(
        [user("Fix the parser."), summarized, user("Now the docs."), assistant("Done.")]
    )
    loaded = load(write(tmp_path, session))
    texts = [m.content for m in loaded.messages]
    assert texts == [
        "Fix the parser.",
        "Parser fixed.",
        "The person asked about timezones; the parser was fixed.",
        "Now the docs.",
        "Done.",
    ]
    summary = loaded.messages[2]
    assert summary.meta[BOUNDARY_KEY]["agent"] == "continue"
    assert is_note(summary) and not is_person_written(summary)


def test_a_summary_comes_after_its_items_results_and_a_stray_result_stays_visible(
    tmp_path: Path,
) -> None:
    grep = tool_call("g", "grep_search", query="tzinfo")
    summarized = assistant("Searching.", grep, states=[state(grep, "calling")])
    summarized["conversationSummary"] = "Searched for tzinfo."
    session = saved(
        [user("Find tzinfo uses."), summarized, tool_item("g", "dates.py:3"), tool_item("zz", "?")]
    )
    loaded = load(write(tmp_path, session))
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "user", "user"]
    assert loaded.messages[2].content == "dates.py:3"
    assert "'zz' this answers is not in the log" in loaded.messages[3].content
    assert is_note(loaded.messages[4]) and loaded.messages[4].content == "Searched for tzinfo."
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("orphan_result", "zz")]


def test_the_clis_summary_item_is_the_compaction(tmp_path: Path) -> None:
    text = "Summary: the CLI was ported to click; tests remain."
    item = assistant(text)
    item["conversationSummary"] = text
    loaded = load(write(tmp_path, saved([item, user("Port the tests."), assistant("On it.")])))
    assert [m.role for m in loaded.messages] == ["assistant", "user", "assistant"]
    assert loaded.messages[0].content == text and is_note(loaded.messages[0])
    assert loaded.messages[0].meta[BOUNDARY_KEY]["kind"] == "compaction"


def test_detection_takes_continue_sessions_and_nothing_like_them(tmp_path: Path) -> None:
    assert detect_format(write(tmp_path, extension_session())) == "continue"
    (tmp_path / "sessions.json").write_text(
        json.dumps([{"sessionId": "s", "title": "t", "workspaceDirectory": "", "dateCreated": "1"}])
    )
    with pytest.raises(FormatError):
        load(tmp_path / "sessions.json")  # Continue's list of sessions is not a session
    traj = {
        "history": [
            {"role": "system", "content": "You are SWE-agent."},
            {"role": "user", "content": "fix it"},
        ],
        "info": {},
    }
    (tmp_path / "run.traj").write_text(json.dumps(traj))
    assert detect_format(tmp_path / "run.traj") == "swe-agent"


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    history = [user("Audit every module for naive datetimes.")]
    for i in range(30):
        call = tool_call(f"g{i}", "grep_search", query="datetime(")
        history.append(
            assistant(
                f"Module m{i}.",
                call,
                states=[state(call, "done", f"m{i}.py: datetime.now()\n" * 40)],
            )
        )
    path = write(tmp_path, saved(history), "session.json")
    counted, _ = read_by_the_commands(path, "continue", "qwen-code")
    assert counted["messages"] == 61


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_file_and_deep_nesting_are_one_line_errors(tmp_path: Path) -> None:
    text = json.dumps(extension_session())
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    deep_session = extension_session()
    deep_session["history"][0]["contextItems"][0]["uri"] = json.loads("[" * 600 + "]" * 600)
    deep = write(tmp_path, deep_session, "deep.json")
    truncated, nested = run_all(["count", str(cut), "--format", "continue"], ["count", str(deep)])
    assert "cut.json" in one_line_error(truncated)
    assert "nest" in one_line_error(nested).lower()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            lambda s: s["history"].__setitem__(1, "thinking"),
            "history[1]: expected an object with a 'message'",
        ),
        (
            lambda s: s["history"][0]["message"].__setitem__("role", "human"),
            "history[0].message.role 'human'",
        ),
        (
            lambda s: s["history"][0]["message"].__setitem__("content", 42),
            "history[0].message.content: expected text",
        ),
        (
            lambda s: s["history"][2]["message"].__setitem__("toolCalls", ["x"]),
            "history[2].message.toolCalls[0]",
        ),
        (lambda s: s.__setitem__("history", {"0": {}}), "'history': expected a list"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_clear_error(tmp_path: Path, change: Any, says: str) -> None:
    session = extension_session()
    change(session)
    path = write(tmp_path, session)
    with pytest.raises(FormatError, match="continue") as caught:
        load(path, format="continue")
    assert says in str(caught.value)
    (result,) = run_all(["count", str(path), "--format", "continue"])
    assert says in one_line_error(result)


def _containers(value: Any) -> list[Any]:
    """Every object and list inside ``value`` (itself first)."""
    found = [value]
    children = value.values() if isinstance(value, dict) else value
    for child in children:
        if isinstance(child, dict | list):
            found.extend(_containers(child))
    return found


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    session = extension_session()
    target = data.draw(st.sampled_from([c for c in _containers(session) if c]))
    key = data.draw(
        st.sampled_from(sorted(target) if isinstance(target, dict) else range(len(target)))
    )
    target[key] = data.draw(ODD_VALUES)
    try:
        loaded = loads(
            json.dumps(session),
            "mutated.json",
            format=data.draw(st.sampled_from([None, "continue"])),
        )
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
