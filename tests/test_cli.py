"""The ``compaction`` command, through its real entry point in subprocesses.

Subprocess start-up dominates the run time, so commands that do not depend on each other are
started together (:func:`run_all`) and their assertions grouped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "compaction" / "examples" / "agent_session.json"
CLI = [sys.executable, "-m", "compaction.cli"]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("COMPACTION_SESSIONS_DIR", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run_all(
    *commands: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """Run every command at once (each ``CLI + args``); answer their results in order."""
    procs = [
        subprocess.Popen(
            [*CLI, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(env),
            cwd=cwd or ROOT,
        )
        for args in commands
    ]
    done = []
    for args, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess([*CLI, *args], proc.returncode, out, err))
    return done


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run_all(list(args), **kwargs)[0]  # type: ignore[arg-type]


def call(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` in this process: the same entry point, without a process start-up
    (which costs most of a second here); used where a subprocess proves nothing more."""
    from compaction.cli import main

    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # --help and --version exit through argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single line a bad input must produce (and check there is no traceback)."""
    assert result.returncode == 2, (result.args, result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (result.args, result.stderr)
    assert lines[0].startswith("compaction: error: ")
    return lines[0]


def test_every_subcommand_has_help_with_an_example() -> None:
    subcommands = [
        ["compact"],
        ["count"],
        ["replay"],
        ["strategies"],
        ["session"],
        ["session", "list"],
        ["session", "show"],
        ["session", "export"],
        ["session", "import"],
        ["session", "clear"],
        ["session", "delete"],
    ]
    results = run_all(["--help"], *[[*s, "--help"] for s in subcommands])
    top = results[0]
    assert top.returncode == 0
    for name in ("compact", "count", "replay", "strategies", "session"):
        assert name in top.stdout
    for sub, result in zip(subcommands, results[1:], strict=True):
        assert result.returncode == 0, (sub, result.stderr)
        assert "example" in result.stdout, sub
        assert f"compaction {' '.join(sub)}" in result.stdout, sub


def test_compact_writes_a_smaller_valid_conversation_and_reports(tmp_path: Path) -> None:
    from compaction.formats import load
    from compaction.tokens import TiktokenCounter
    from compaction.validate import is_valid

    out = tmp_path / "out.json"
    out_anthropic = tmp_path / "anthropic.json"
    as_json, plain, to_anthropic, by_window = run_all(
        ["compact", str(EXAMPLE), "--target", "4000", "-o", str(out), "--json"],
        ["compact", str(EXAMPLE), "--target", "4000"],
        [
            "compact",
            str(EXAMPLE),
            "--target",
            "4000",
            "--to",
            "anthropic",
            "-o",
            str(out_anthropic),
        ],
        [
            "compact",
            str(EXAMPLE),
            "--window",
            "10000",
            "--ratio",
            "0.4",
            "--dry-run",
            "--json",
            "--counter",
            "approx",
        ],
    )
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["target"] == 4000
    assert report["tokens_after"] < report["tokens_before"]
    assert report["tokens_after"] <= report["target"]
    assert report["fits"] is True
    assert report["format"] == "openai" and report["output"] == str(out)
    # The report describes the file written: same size by the same counter, valid, smaller.
    written = load(out)
    assert is_valid(written.messages)
    assert len(written.messages) == report["messages_after"] < report["messages_before"]
    assert TiktokenCounter().count_messages(written.messages) == report["tokens_after"]
    steps = {s["strategy"]: s for s in report["strategies"]}
    assert list(steps) == ["dedupe", "tool_results", "sliding_window", "summary", "fit"]
    applied = [s for s in report["strategies"] if s["status"] == "applied"]
    assert sum(s["saved"] for s in applied) == report["saved"]
    assert steps["tool_results"]["status"] == "applied"

    # Without -o the conversation goes to stdout and the report to stderr.
    assert plain.returncode == 0, plain.stderr
    messages = json.loads(plain.stdout)
    assert isinstance(messages, list) and len(messages) == report["messages_after"]
    assert "tool_results" in plain.stderr and "4,000" in plain.stderr

    assert to_anthropic.returncode == 0, to_anthropic.stderr
    request = json.loads(out_anthropic.read_text())
    assert "system" in request and request["messages"][0]["role"] == "user"
    assert load(out_anthropic).format == "anthropic"

    assert by_window.returncode == 0, by_window.stderr
    window_report = json.loads(by_window.stdout)
    assert window_report["target"] == 4000 and window_report["output"] is None
    assert window_report["counter"] == "approx"


def test_compact_that_cannot_reach_the_target_exits_1_and_still_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "huge_system.json"
    source.write_text(
        json.dumps(
            [
                {"role": "system", "content": "Follow the house rules. " * 400},
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
            ]
        )
    )
    out = tmp_path / "out.json"
    # the default ladder's last resort would cut the system prompt (it alone is over); a
    # ladder without it keeps the strict floor
    strict = ("--ladder", "tool_results,sliding_window,summary")
    plain = run("compact", str(source), "--target", "200", *strict, "-o", str(out))
    as_json = call(
        capsys, "compact", str(source), "--target", "200", *strict, "--dry-run", "--json"
    )
    assert plain.returncode == 1, plain.stderr
    assert "could not reach the target" in plain.stderr and str(out) in plain.stderr
    assert "Traceback" not in plain.stderr
    written = json.loads(out.read_text())
    assert written[0]["role"] == "system"  # the best result, still a whole conversation
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["fits"] is False and report["tokens_after"] > report["target"] == 200


def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_transcript = tmp_path / "notes.json"
    not_a_transcript.write_text('{"shopping": ["eggs", "milk"]}')
    truncated = tmp_path / "run.jsonl"
    truncated.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hel')
    bad_toml = tmp_path / "ladder.toml"
    bad_toml.write_text("use = [ 'tool_results'\n")
    cases = {
        "missing file": (["compact", str(tmp_path / "nope.json"), "--target", "100"], "nope.json"),
        "unknown format": (["compact", str(not_a_transcript), "--target", "100"], "notes.json"),
        "truncated JSONL": (["compact", str(truncated), "--target", "100"], "line 2"),
        "unknown strategy": (
            ["compact", str(EXAMPLE), "--target", "100", "--ladder", "tool_results,teleport"],
            "teleport",
        ),
        "zero target": (["compact", str(EXAMPLE), "--target", "0"], "--target"),
        "negative target": (["compact", str(EXAMPLE), "--target", "-5"], "--target"),
        "text target": (["compact", str(EXAMPLE), "--target", "lots"], "--target"),
        "bad config": (
            ["compact", str(EXAMPLE), "--target", "100", "--config", str(bad_toml)],
            "ladder.toml",
        ),
        "json without -o": (["compact", str(EXAMPLE), "--target", "100", "--json"], "--json"),
    }
    outputs = {name: tmp_path / f"out-{i}.json" for i, name in enumerate(cases)}
    commands = [
        [*args, "-o", str(outputs[name])] if name != "json without -o" else args
        for name, (args, _) in cases.items()
    ]
    extra = {
        "count missing": ["count", str(tmp_path / "nope.json")],
        "count unknown format": ["count", str(not_a_transcript)],
        "replay truncated": ["replay", str(truncated), "--window", "1000"],
        "replay zero window": ["replay", str(EXAMPLE), "--window", "0"],
        "unknown command": ["teleport"],
    }
    # The first few in subprocesses (what a shell sees); the rest in-process, same entry point.
    spawned = 5
    results = run_all(*commands[:spawned]) + [call(capsys, *c) for c in commands[spawned:]]
    results += [call(capsys, *c) for c in extra.values()]
    for (name, (_, needle)), result in zip(cases.items(), results, strict=False):
        line = one_line_error(result)
        assert needle in line, (name, line)
        assert not outputs[name].exists(), name
        assert result.stdout == "", name
    for name, result in zip(extra, results[len(cases) :], strict=True):
        assert one_line_error(result), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ladder.toml", "notes.json", "run.jsonl"]


def test_count_by_role_tool_and_largest(capsys: pytest.CaptureFixture[str]) -> None:
    as_json, plain = run_all(
        ["count", str(EXAMPLE), "--json", "--top", "5"],
        ["count", str(EXAMPLE)],
    )
    approx = call(capsys, "count", str(EXAMPLE), "--counter", "approx", "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["total"] == sum(r["tokens"] for r in report["by_role"].values())
    assert report["messages"] == sum(r["messages"] for r in report["by_role"].values())
    assert report["counter"] == "tiktoken (cl100k_base)"
    tool_tokens = report["by_role"]["tool"]["tokens"]
    assert tool_tokens == sum(t["result_tokens"] for t in report["by_tool"].values())
    assert {"read_file", "run", "grep", "edit_file"} <= set(report["by_tool"])
    sizes = [m["tokens"] for m in report["largest"]]
    assert len(sizes) == 5 and sizes == sorted(sizes, reverse=True)
    assert sizes[0] <= report["total"]

    assert plain.returncode == 0
    assert "tiktoken (cl100k_base)" in plain.stdout
    assert f"{report['total']:,}" in plain.stdout
    for heading in ("by role", "by tool", "largest"):
        assert heading in plain.stdout

    assert json.loads(approx.stdout)["counter"] == "approx"


def test_replay_shows_every_call_within_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    window = 12000
    as_json = run("replay", str(EXAMPLE), "--window", str(window), "--json")
    plain = call(capsys, "replay", str(EXAMPLE), "--window", str(window))
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    calls = report["calls"]
    assert len(calls) == report["totals"]["calls"] > 10
    assert all(c["tokens_sent"] <= window for c in calls)
    assert all(0.0 <= c["prefix_share"] <= 1.0 for c in calls)
    compacted = [c for c in calls if c["compacted"]]
    assert compacted and report["totals"]["compactions"] == len(compacted)
    assert all(c["strategies"] and c["tokens_saved"] > 0 for c in compacted)
    assert all(c["tokens_sent"] <= report["compact_to"] for c in compacted)
    assert plain.returncode == 0
    assert "prompt-cache share" in plain.stdout and "tool_results" in plain.stdout


def test_replay_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "calls.png"
    result = run("replay", str(EXAMPLE), "--window", "12000", "--plot", str(png))
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_strategies_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from compaction.registry import registry

    as_json = run("strategies", "--json")
    plain = call(capsys, "strategies")
    assert as_json.returncode == 0, as_json.stderr
    listed = json.loads(as_json.stdout)
    assert [s["key"] for s in listed] == registry.keys()
    for s in listed:
        assert set(s["capabilities"]) == {
            "model_call",
            "lossless",
            "keeps_tool_pairs",
            "deterministic",
            "writes_ledger",
        }
        assert s["explanation"]
    by_key = {s["key"]: s for s in listed}
    # The default summary runs the offline extractive summariser: no model call, deterministic.
    assert by_key["summary"]["capabilities"]["model_call"] is False
    assert by_key["summary"]["capabilities"]["deterministic"] is True
    assert by_key["tool_results"]["capabilities"]["model_call"] is False
    for key in registry:
        assert key in plain.stdout


def test_session_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = pytest.importorskip("compaction.sessions")
    store_dir = tmp_path / "store"
    store = sessions.SessionStore(store_dir, durable=False)
    chat = store.open("chat")
    chat.add_user("Which files mention paging?")
    chat.add_assistant("README.md and tasklite/pagination.py.")
    store.open("other").add_user("hello")
    export = tmp_path / "chat-export.json"
    env = {"COMPACTION_SESSIONS_DIR": str(store_dir)}

    listed, shown, exported = run_all(
        ["session", "list", "--json"],
        ["session", "show", "chat", "--json"],
        ["session", "export", "chat", str(export), "--store", str(store_dir)],
        env=env,
    )
    assert listed.returncode == 0, listed.stderr
    names = {s["name"]: s for s in json.loads(listed.stdout)["sessions"]}
    assert set(names) == {"chat", "other"} and names["chat"]["messages"] == 2
    show = json.loads(shown.stdout)
    assert [e["message"]["content"] for e in show["entries"]] == [
        "Which files mention paging?",
        "README.md and tasklite/pagination.py.",
    ]
    assert exported.returncode == 0 and export.exists()

    monkeypatch.setenv("COMPACTION_SESSIONS_DIR", str(store_dir))
    imported = run("session", "import", str(export), "--name", "restored", "--json", env=env)
    cleared = call(capsys, "session", "clear", "chat")
    deleted = call(capsys, "session", "delete", "other")
    missing = call(capsys, "session", "show", "ghost")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {
        "name": "restored",
        "imported": str(export),
        "messages": 2,
    }
    assert [m.content for m in store.open("restored").messages] == [
        "Which files mention paging?",
        "README.md and tasklite/pagination.py.",
    ]
    assert cleared.returncode == 0 and store.open("chat").messages == ()
    assert deleted.returncode == 0 and store.list() == ["chat", "restored"]
    assert "ghost" in one_line_error(missing)

    plain = call(capsys, "session", "list")
    assert plain.returncode == 0 and "restored" in plain.stdout


def test_a_directory_is_searched_and_summarised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    (logs / "nested").mkdir(parents=True)
    (logs / "a.json").write_bytes(EXAMPLE.read_bytes())
    (logs / "nested" / "b.json").write_bytes(EXAMPLE.read_bytes())
    (logs / "README.md").write_text("not a transcript, and not looked at")
    (logs / "nested" / "settings.json").write_text('{"theme": "dark"}')
    out = tmp_path / "out"
    compacted = run("compact", str(logs), "--target", "4000", "-o", str(out), "--json")
    counted = call(capsys, "count", str(logs), "--json")
    needs_output = call(capsys, "compact", str(logs), "--target", "4000")
    assert compacted.returncode == 0, compacted.stderr
    report = json.loads(compacted.stdout)
    assert [Path(f["file"]).name for f in report["files"]] == ["a.json", "b.json"]
    assert all(f["fits"] for f in report["files"])
    assert [Path(p["file"]).name for p in report["problems"]] == ["settings.json"]
    assert report["problems"][0]["skipped"] is True
    assert (out / "a.json").exists() and (out / "nested" / "b.json").exists()
    assert report["summary"]["tokens_after"] == sum(f["tokens_after"] for f in report["files"])

    assert counted.returncode == 0
    counts = json.loads(counted.stdout)
    assert counts["total"] == sum(f["total"] for f in counts["files"])
    assert "-o DIR" in one_line_error(needs_output)


def test_installed_console_script() -> None:
    script = Path(sys.executable).with_name("compaction")
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("compaction ")
    counted = subprocess.run(
        [str(script), "count", str(EXAMPLE), "--json"], capture_output=True, text=True, timeout=60
    )
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["messages"] > 40


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_rich_tables_on_a_terminal() -> None:
    pytest.importorskip("rich")
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*CLI, "count", str(EXAMPLE), "--counter", "approx"],
        stdout=follower,
        stderr=follower,
        env=_env({"COLUMNS": "120"}),
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "Traceback" not in text
    assert "━" in text or "─" in text  # rich's box drawing, not the plain dashes
    assert "read_file" in text


@pytest.mark.transcripts
def test_real_transcripts_are_counted(transcripts_dir: Path) -> None:
    result = run("count", str(transcripts_dir), "--counter", "approx", "--json")
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout)
    formats = {f["format"] for f in counts["files"]}
    assert {"claude-code", "mini-swe-agent", "swe-agent"} <= formats
    assert counts["total"] == sum(f["total"] for f in counts["files"])


def test_output_equal_to_the_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The input is the full record (an agent's own log, say): never overwrite it, even when
    # the run succeeds, and never in another shape (a Claude Code log as an Anthropic request).
    src = tmp_path / "run.json"
    src.write_bytes(EXAMPLE.read_bytes())
    before = src.read_bytes()
    line = one_line_error(
        call(capsys, "compact", str(src), "--target", "4000", "--counter", "approx", "-o", str(src))
    )
    assert "is the input file" in line
    assert src.read_bytes() == before
    # several inputs, -o the directory they are in: each is refused, none is touched
    other = tmp_path / "other.json"
    other.write_bytes(before)
    result = call(
        capsys, "compact", str(tmp_path), "--target", "4000", "--counter", "approx",
        "-o", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2
    assert src.read_bytes() == before and other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "run.json"]


def test_window_times_ratio_is_exact(capsys: pytest.CaptureFixture[str]) -> None:
    window = 10**30 - 1
    result = call(
        capsys, "compact", str(EXAMPLE), "--window", str(window), "--counter", "approx",
        "--dry-run", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["target"] == window * 2 // 5


def test_output_through_a_symlink_is_refused_and_the_link_kept(tmp_path) -> None:
    # A symlink at the destination is never followed nor replaced (issue 13): someone else
    # may have pointed it at a file of ours.
    from compaction._atomic import NotRegularFileError, write_atomic

    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(NotRegularFileError):
        write_atomic(link, b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"old"


def test_python_dash_m_compaction_is_the_command() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "compaction", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("compaction ")
