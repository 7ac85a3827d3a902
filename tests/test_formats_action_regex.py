"""mini-swe-agent's ``action_regex`` comes from the file: it is untrusted input.

The default pattern is matched by a linear-time scan that must agree with ``re`` exactly; a
file's own pattern runs in a child process with a deadline; an invalid one is a format error.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, load
from compaction.formats.action_regex import DEFAULT, SECONDS, _default_actions
from tests.test_cli import one_line_error, run

# The characters the default pattern cares about, plus noise.
_TEXT = st.text(
    alphabet=st.sampled_from(["```bash", "```", "`", "\n", " ", "\t", "x", "bash", "\r"]).map(str),
    max_size=0,
) | st.lists(
    st.sampled_from(["```bash", "```", "`", "\n", " ", "\t", "x", "bash", "\r", "\n```"]),
    max_size=24,
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(text=_TEXT)
def test_linear_scan_agrees_with_re_on_the_default_pattern(text: str) -> None:
    expected = [(m.start(), m.end(), m.group(1)) for m in re.finditer(DEFAULT, text, re.DOTALL)][:2]
    assert [tuple(a) for a in _default_actions(text)] == expected


def test_linear_scan_stays_linear_on_unclosed_fences() -> None:
    # An opening fence 200k times and no closing one: re's lazy group rescans to the end
    # from every opening (quadratic); the scan remembers the failed search.
    assert re.findall(DEFAULT, "```bash\nx" * 50, re.DOTALL) == []
    assert _default_actions("```bash\nx" * 200_000) == []


def _mini(tmp_path: Path, regex: object, content: str) -> Path:
    path = tmp_path / "run.traj.json"
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "done"},
    ]
    info = {"mini_version": "1.0", "config": {"agent": {"action_regex": regex}}}
    path.write_text(json.dumps({"messages": messages, "info": info}))
    return path


def test_a_catastrophic_pattern_is_stopped_within_its_deadline(tmp_path: Path) -> None:
    # (a|aa)+$ on 80 a's and a b: Fibonacci(80) ways to backtrack, i.e. forever.
    path = _mini(tmp_path, "(a|aa)+$", "a" * 80 + "b")
    assert path.stat().st_size < 400
    started = time.monotonic()
    with pytest.raises(FormatError, match="did not finish"):
        load(path)
    assert time.monotonic() - started < SECONDS + 10
    line = one_line_error(run("count", str(path), "--counter", "approx"))
    assert "action_regex" in line


def test_invalid_or_odd_patterns_are_format_errors(tmp_path: Path) -> None:
    for regex, needle in (
        ("(", "not a valid regular expression"),
        (["x"], "expected a regular expression"),
        ("(a)(b)", "at most one group"),
        ("x" * 5000, "longer than"),
    ):
        path = _mini(tmp_path, regex, "```bash\nls\n```")
        with pytest.raises(FormatError, match=re.escape(needle)):
            load(path)
    line = one_line_error(run("compact", str(_mini(tmp_path, "(", "x")), "--target", "10"))
    assert "action_regex" in line


def test_a_files_own_pattern_is_used(tmp_path: Path) -> None:
    path = _mini(tmp_path, r"<cmd>(.*?)</cmd>", "Listing.\n<cmd>ls -la</cmd>")
    loaded = load(path)
    call = loaded.messages[2].tool_calls[0]
    assert json.loads(call.arguments) == {"command": "ls -la"}
    assert loaded.messages[2].content == "Listing."
    assert loaded.messages[3].role == "tool"
