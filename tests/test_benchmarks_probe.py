"""The ``probe`` benchmark reads raw logs by its own rules and asks what it says it asks.

Hand-written logs in each format (real files in a temporary folder), then every real
transcript: each is read, and every fact the probe asks is present in the loaded messages
before any compaction (the probe's parser and the library's readers agree on the log).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.common.data import load_cases
from benchmarks.probe.suite import TARGETS, probe_case
from compaction import TiktokenCounter
from compaction.check.edits import shell_edits
from compaction.check.facts import FACT_KINDS, facts
from compaction.check.logs import UnreadableLog, read_log
from compaction.formats import load


@pytest.mark.parametrize(
    ("command", "edited"),
    [
        ("sed -i 's/if/elif/' pkg/a.py pkg/b.py", ("pkg/a.py", "pkg/b.py")),
        ("sed -i '' -e '4130s/if/elif/' -e '/return/d' a/b.py", ("a/b.py",)),
        ("sed -n '4130s/if/elif/p' pkg/a.py", ()),  # reads: the script is never a path
        ("sed -i.bak -f fix.sed src/x.py && cat src/x.py", ("src/x.py",)),
        ("perl -pi -e 's/a/b/g' lib/x.pm lib/y.pm", ("lib/x.pm", "lib/y.pm")),
        ("perl -ne 'print if /x/' lib/x.pm", ()),
        ("cat > new.py <<'EOF'\nx = a > b\nprint(1 >> 2)\nEOF\npython new.py 2>&1", ("new.py",)),
        ("echo hi >> /tmp/log.txt 2>/dev/null; ls &> all.log", ("/tmp/log.txt", "all.log")),
        ("python -c 'print(3 > 2)' 2>&1 | tee out.txt", ("out.txt",)),
        ("cd /repo && git diff > /tmp/p.diff\ncat /tmp/p.diff", ("/tmp/p.diff",)),
        ("grep -rn 'a > b' src/ | head", ()),
        ('bd create --description="pin {:credo, \\"~> 1.7\\"}" --type=task', ()),
        ('echo "a; b > c" > notes/out.txt', ("notes/out.txt",)),
    ],
)
def test_shell_edits(command: str, edited: tuple[str, ...]) -> None:
    assert shell_edits(command) == edited


_part = st.text(alphabet="abcxyz_019", min_size=1, max_size=8)
_paths = st.lists(_part, min_size=1, max_size=4).map(lambda parts: "/".join(parts) + ".py")
_scripts = st.text(alphabet="abs/^$.*+?[]{}()|\\0123456789 pdgi;=<>&", min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(_scripts, st.lists(_paths, min_size=1, max_size=3, unique=True))
def test_a_sed_script_is_never_a_path(script: str, paths: list[str]) -> None:
    quoted = " ".join(paths)
    assert shell_edits(f"sed -i '{script}' {quoted}") == tuple(paths)
    assert shell_edits(f"sed -i -e '{script}' {quoted} && cat {paths[0]}") == tuple(paths)
    assert shell_edits(f"sed -n '{script}' {quoted}") == ()


def _kinds(found: list) -> dict[str, list[tuple[str, ...]]]:  # type: ignore[type-arg]
    out: dict[str, list[tuple[str, ...]]] = {}
    for fact in found:
        out.setdefault(fact.kind, []).append(fact.forms)
    return out


def _mini(tmp_path: Path) -> Path:
    def bash(command: str) -> dict[str, str]:
        return {"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"}

    def out(text: str) -> dict[str, str]:
        return {
            "role": "user",
            "content": f"<returncode>1</returncode>\n<output>\n{text}\n</output>",
        }

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": "<pr_description>\nFix #31337: `parse_header()` fails in "
            "src/pkg/headers.py\n</pr_description>\nInstructions: edit setup.cfg if needed.",
        },
        bash("sed -i 's/a/b/' src/pkg/headers.py"),
        out("ok"),
        bash("python -m pytest tests/test_headers.py"),
        out(
            "FAILED tests/test_headers.py::test_parse_empty - assert 1\n"
            "Traceback (most recent call last):\nkeyerror.KeyError: 'x'"
        ),
        bash("cat > tests/test_new.py <<'EOF'\ndef test(): assert 1 > 0\nEOF"),
        out(""),
        bash("sed -n '1,20p' src/pkg/other.py"),
        out("1 x"),
    ]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"messages": messages, "info": {}}), encoding="utf-8")
    return path


def test_mini_swe_agent_log(tmp_path: Path) -> None:
    log = read_log(_mini(tmp_path))
    assert log.format == "mini-swe-agent"
    found = _kinds(facts(log))
    # The PR description only: the instructions after it name no task identifier.
    assert found["task id"] == [("#31337",), ("parse_header",), ("src/pkg/headers.py",)]
    assert found["edited file"] == [("tests/test_new.py",), ("src/pkg/headers.py",)]
    assert found["failing test"] == [("tests/test_headers.py::test_parse_empty",)]
    assert found["error type"] == [("KeyError",)]
    assert found["last command"] == [("sed -n '1,20p' src/pkg/other.py",)]


def test_swe_agent_log_tracks_the_open_file(tmp_path: Path) -> None:
    steps = [
        ("open lib/core.py", "[File: lib/core.py]"),
        ("edit 3:4\n    return x\nend_of_edit", "File updated."),
        ("create check.py", "[File: check.py]"),
        ("python check.py", "FAIL: test_round (tests.test_core.CoreTests)\nValueError: bad"),
        ("submit", "diff"),
    ]
    data = {
        "history": [
            {"role": "system", "content": "SETTING"},
            {"role": "user", "content": "demo", "is_demo": True},
            {
                "role": "user",
                "content": "ISSUE:\nround_half() breaks in lib/core.py\n\nINSTRUCTIONS:\nuse x.py",
            },
        ],
        "trajectory": [{"action": a, "observation": o} for a, o in steps],
    }
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(data), encoding="utf-8")
    found = _kinds(facts(read_log(path)))
    assert found["task id"] == [("round_half",), ("lib/core.py",)]
    assert found["edited file"] == [("check.py",), ("lib/core.py",)]
    assert found["failing test"] == [
        ("test_round (tests.test_core.CoreTests)", "tests.test_core.CoreTests.test_round")
    ]
    assert found["error type"] == [("ValueError",)] and found["last command"] == [("submit",)]


def test_claude_code_log_counts_only_edits_that_happened(tmp_path: Path) -> None:
    def line(kind: str, content: object, **extra: object) -> str:
        return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})

    def use(key: str, name: str, **args: str) -> str:
        return line("assistant", [{"type": "tool_use", "id": key, "name": name, "input": args}])

    def result(key: str, text: str, error: bool = False) -> str:
        block = {"type": "tool_result", "tool_use_id": key, "content": text, "is_error": error}
        return line("user", [block])

    lines = [
        line("user", "<command-name>/clear</command-name>"),
        line("user", "Make lib/app/router.ex route /health", isMeta=False),
        use("t1", "Edit", file_path="/w/lib/app/router.ex", old_string="a", new_string="b"),
        result("t1", "ok"),
        use("t2", "Write", file_path="/w/lib/app/rejected.ex", content="x"),
        result("t2", "The user doesn't want to proceed with this tool use.", error=True),
        use("t3", "Bash", command="mix test 2>&1 | tail -20"),
        result(
            "t3",
            "  1) test health returns 200 (App.RouterTest)\n     test/app/router_test.exs:12\n"
            "     ** (KeyError) key :x not found",
        ),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = _kinds(facts(read_log(path)))
    assert found["task id"] == [("lib/app/router.ex",)]
    assert found["edited file"] == [("/w/lib/app/router.ex",)]  # the refused Write is no edit
    assert found["failing test"] == [
        ("test/app/router_test.exs:12", "test health returns 200 (App.RouterTest)")
    ]
    assert found["error type"] == [("KeyError",)]
    assert found["last command"] == [("mix test 2>&1 | tail -20",)]


def test_other_files_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    with pytest.raises(UnreadableLog, match="chat.json"):
        read_log(path)
    broken = tmp_path / "broken.traj"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(UnreadableLog, match=r"broken\.traj"):
        read_log(broken)
    # Valid JSON of an unexpected shape is refused by name too, never a crash.
    odd = tmp_path / "odd.traj.json"
    odd.write_text(json.dumps({"messages": ["not", "a", "dict"]}), encoding="utf-8")
    with pytest.raises(UnreadableLog, match=r"odd\.traj\.json: no user message"):
        read_log(odd)


def test_probe_case_judges_every_target_and_the_replay(tmp_path: Path) -> None:
    path = _mini(tmp_path)
    messages = tuple(load(path).messages)
    counter = TiktokenCounter()
    tokens = counter.count_messages(messages)
    row = probe_case(path, messages, tokens, counter)
    assert row["format"] == "mini-swe-agent" and not row["absent"]
    assert {kind for kind, _ in row["facts"]} == set(FACT_KINDS)
    assert set(row["targets"]) == {str(t) for t in TARGETS} | {"replay"}
    for found in row["targets"].values():
        assert "error" not in found and len(found["recovered"]) == len(row["facts"])
    # Uncompacted (a target over the whole), everything is found.
    whole = probe_case(path, messages, tokens * 10, counter, replayed=False)
    assert all(all(t["recovered"]) for t in whole["targets"].values())


@pytest.mark.transcripts
def test_every_real_transcript_is_read_and_its_facts_are_in_it(transcripts_dir: Path) -> None:
    cases, unreadable = load_cases(transcripts_dir)
    assert cases and not unreadable
    counter = TiktokenCounter()
    formats = set()
    for case in cases:
        row = probe_case(
            transcripts_dir / case.name, case.messages, case.tokens * 10, counter, replayed=False
        )
        formats.add(row["format"])
        assert row["format"] == case.format
        assert not row["absent"], (case.name, row["absent"])
    assert formats == {"claude-code", "mini-swe-agent", "swe-agent"}
