"""The agent-log readers through the CLI, and under hostile input.

Every real log of these formats is read by ``count``, ``compact`` and ``replay`` (subprocesses,
exit 0). The fuzz mutates real samples of each format (a field set to an odd value, the file
cut short, lines dropped, garbage) and holds the readers to: a readable conversation with at
least one message of text or calls, or a [`FormatError`][]; never another exception, never
exit 70, never exit 0 with nothing read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, loads
from compaction.validate import problems
from tests.conftest import ROOT
from tests.test_cli import call, run_all

LOGS = ROOT.parent / "shared" / "data" / "logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agent_logs"
FOLDERS = ("gemini-cli", "copilot-cli", "openhands", "cursor", "factory-droid")


def _real_logs() -> list[Path]:
    return sorted(p for f in FOLDERS if (LOGS / f).is_dir() for p in (LOGS / f).iterdir())


def _all_logs() -> list[Path]:
    return [*_real_logs(), FIXTURES / "aider.chat.history.md", FIXTURES / "specstory.md"]


@pytest.mark.parametrize("path", _all_logs(), ids=lambda p: p.name)
def test_count_compact_and_replay_read_every_log(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    count, compact, replay = run_all(
        ["count", str(path), "--json"],
        ["compact", str(path), "--target", "2000", "-o", str(out)],
        ["replay", str(path), "--window", "8000", "--price", "claude-sonnet-4-5"],
    )
    for result in (count, compact, replay):
        assert result.returncode == 0, (result.args, result.stderr)
    assert json.loads(count.stdout)["messages"] > 0
    written = json.loads(out.read_text())
    assert written, "compact wrote an empty conversation"
    assert "priced as" in replay.stdout


# -- hostile input ------------------------------------------------------------------------


def _short(value: Any) -> Any:
    """``value`` with long strings cut (small samples keep the fuzz fast and its reports short)."""
    if isinstance(value, str):
        return value[:200]
    if isinstance(value, list):
        return [_short(v) for v in value[:8]]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _sample(path: Path, lines: int = 14) -> str:
    text = path.read_text()
    if path.suffix == ".jsonl":
        kept = [json.loads(line) for line in text.split("\n")[:lines] if line.strip()]
        return "\n".join(json.dumps(_short(r)) for r in kept) + "\n"
    return json.dumps(_short(json.loads(text)))


def _samples() -> dict[str, str]:
    found = {p.name: _sample(p) for p in _real_logs()}
    for p in (FIXTURES / "aider.chat.history.md", FIXTURES / "specstory.md"):
        found[p.name] = p.read_text()
    found["droid-store"] = "\n".join(
        json.dumps(r)
        for r in (
            {"type": "session_start", "id": "s"},
            {"type": "message", "id": "m1", "message": {"role": "user", "content": "hi"}},
            {"type": "message", "id": "m2", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "Execute", "input": {}}]}},
        )
    )  # fmt: skip
    return found


SAMPLES = _samples()
ODD: Any = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.just([]),
    st.just({}),
    st.just([None, 1, "x"]),
    st.just({"text": 1, "id": None, "type": "gemini"}),
)


def _paths(value: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [trail]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_paths(child, (*trail, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value[:6]):
            out.extend(_paths(child, (*trail, index)))
    return out


def _set(value: Any, trail: tuple[Any, ...], new: Any) -> Any:
    if not trail:
        return new
    head, rest = trail[0], trail[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _set(value[head], rest, new)
    return copy


@st.composite
def _mutated(draw: Any) -> str:
    name = draw(st.sampled_from(sorted(SAMPLES)))
    text = SAMPLES[name]
    how = draw(st.sampled_from(["field", "cut", "drop", "garbage"]))
    if how == "cut":
        return text[: draw(st.integers(0, len(text)))]
    if how == "drop":
        lines = text.split("\n")
        keep = draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
        return "\n".join(line for line, k in zip(lines, keep, strict=True) if k)
    if how == "garbage":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.text(max_size=30)) + text[at:]
    try:
        docs = [json.loads(text)]
        jsonl = False
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.split("\n") if line.strip().startswith("{")]
        jsonl = True
    if not docs:
        return text
    index = draw(st.integers(0, len(docs) - 1))
    trail = draw(st.sampled_from(_paths(docs[index])))
    docs[index] = _set(docs[index], trail, draw(ODD))
    return "\n".join(json.dumps(d) for d in docs) if jsonl else json.dumps(docs[0])


_FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_FUZZ
@given(text=_mutated())
def test_fuzz_readers_answer_a_conversation_or_a_format_error(text: str) -> None:
    try:
        loaded = loads(text, "fuzzed")
    except FormatError:
        return
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
    assert not problems(loaded.messages)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=_mutated())
def test_fuzz_cli_never_exit_70_nor_0_with_nothing(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "input.jsonl"
    src.write_text(text)
    for args in (
        ["count", str(src), "--counter", "approx", "--json"],
        ["replay", str(src), "--window", "300", "--counter", "approx"],
    ):
        result = call(capsys, *args)
        # 1 is replay's answer when a request does not fit the window even after compaction.
        assert result.returncode in (0, 1, 2), (args, text[:300], result.stderr)
        assert "Traceback" not in result.stderr
        if result.returncode == 0 and args[0] == "count":
            assert json.loads(result.stdout)["messages"] > 0


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "{}",
        "# aider chat started at x\n",
        "# aider chat started at x\n> Aider v1  \n",
        "<!-- Generated by SpecStory -->\n",
    ],
)
def test_empty_logs_are_a_clear_error(text: str) -> None:
    with pytest.raises(FormatError):
        loads(text, "empty")
