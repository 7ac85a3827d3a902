"""Hostile input is normal input: the command never exits 70 (our bug) on any input file.

Bad input is exit 2 with one line naming the file, and in a run over several files the others
are still processed. The fuzzing goes through the real entry point (``main``) in this process,
which is what a subprocess would run, minus a second of start-up per example.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_cli import EXAMPLE, call, one_line_error, run, run_all

SURROGATE_JSON = '[{"role": "user", "content": "broken \\ud800 text"}]'
SURROGATE_JSONL = '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "\\udfff"}\n'


def _deep(levels: int) -> str:
    return '[{"role": "user", "content": "hi", "extra": ' + "[" * levels + "]" * levels + "}]"


def test_lone_surrogates_and_deep_nesting_are_bad_input(tmp_path: Path) -> None:
    files = {
        "surrogate.json": SURROGATE_JSON,
        "surrogate.jsonl": SURROGATE_JSONL,
        "deep.json": _deep(500),
        "deeper.json": _deep(100_000),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    commands = []
    for name in files:
        commands.append(["compact", str(tmp_path / name), "--target", "100", "-o",
                         str(tmp_path / f"out-{name}")])  # fmt: skip
        commands.append(["count", str(tmp_path / name)])
    for result in run_all(*commands):
        line = one_line_error(result)
        assert "surrogate" in line or "nested deeper" in line, line
    assert not list(tmp_path.glob("out-*"))


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "deep.json").write_text(_deep(500))
    (tmp_path / "surrogate.json").write_text(SURROGATE_JSON)
    inputs = [str(tmp_path / n) for n in ("deep.json", "surrogate.json", "good.json")]
    out = tmp_path / "out"
    result = run("compact", *inputs, "--target", "4000", "-o", str(out), "--json")
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert [Path(f["file"]).name for f in report["files"]] == ["good.json"]
    assert (out / "good.json").is_file()
    errors = [line for line in result.stderr.splitlines() if line.startswith("compaction: error")]
    assert len(errors) == 2 and "Traceback" not in result.stderr


def test_replay_with_a_tiny_window_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    for window in ("1", "2"):
        line = one_line_error(call(capsys, "replay", str(EXAMPLE), "--window", window))
        assert "--window" in line


def test_no_raw_log_lines_unless_asked() -> None:
    # A window too small to fit: the trigger logs a warning on every call.
    quiet, verbose = run_all(
        ["replay", str(EXAMPLE), "--window", "5", "--counter", "approx"],
        ["replay", str(EXAMPLE), "--window", "5", "--counter", "approx", "-v"],
    )
    assert quiet.returncode == verbose.returncode == 1
    raw = re.compile(r"^\S+ \w+=\S")
    assert not [line for line in quiet.stderr.splitlines() if raw.match(line)], quiet.stderr
    assert "exceeded the 5-token window" in quiet.stderr
    shown = [line for line in verbose.stderr.splitlines() if "over_target" in line]
    assert shown and all(line.startswith("compaction: WARNING: ") for line in shown)


# -- fuzzing ---------------------------------------------------------------------------------

_EXAMPLE_MESSAGES = json.loads(EXAMPLE.read_text())[:8]

_ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)

_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "id", "function",
           "arguments", "type", "text", "tool_use_id", "input", "messages", "history",
           "system", "info", "action", "tool_call_ids", "message", "uuid")  # fmt: skip


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    """A real conversation with one field, somewhere, replaced by something odd."""
    messages = json.loads(json.dumps(_EXAMPLE_MESSAGES))
    shape = draw(st.sampled_from(["list", "object", "anthropic", "mini", "swe", "jsonl", "cc"]))
    index = draw(st.integers(0, len(messages) - 1))
    field = draw(st.sampled_from(_FIELDS))
    target = messages[index]
    if target.get("tool_calls") and draw(st.booleans()):
        target = target["tool_calls"][0]
        if draw(st.booleans()):
            target = target["function"]
    target[field] = draw(_ODD)
    if shape == "list":
        return json.dumps(messages).encode()
    if shape == "object":
        return json.dumps({"messages": messages, "model": draw(_ODD)}).encode()
    if shape == "anthropic":
        return json.dumps({"system": draw(_ODD), "messages": messages}).encode()
    if shape == "mini":
        agent = {"action_regex": draw(st.one_of(_ODD, st.sampled_from(["(", "[", ""])))}
        info = {"mini_version": "1", "config": {"agent": agent}}
        return json.dumps({"messages": messages, "info": info}).encode()
    if shape == "swe":
        return json.dumps({"history": messages}).encode()
    if shape == "cc":
        records = [
            {"type": m.get("role"), "uuid": str(i), "message": m} for i, m in enumerate(messages)
        ]
        return "".join(json.dumps(r) + "\n" for r in records).encode()
    return "".join(json.dumps(m) + "\n" for m in messages).encode()


def _mini(regex: object) -> bytes:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Look first.\n```bash\nls\n```"},
        {"role": "user", "content": "README.md"},
    ]
    info = {"mini_version": "1.0", "config": {"agent": {"action_regex": regex}}}
    return json.dumps({"messages": messages, "info": info}).encode()


#: Hostile files, every one run through every command.
CORPUS: dict[str, bytes] = {
    "empty": b"",
    "blank lines": b"\n\n",
    "bom only": b"\xef\xbb\xbf",
    "null": b"null",
    "empty list": b"[]",
    "empty object": b"{}",
    "binary": bytes(range(256)),
    "utf-16 with bom": "\ufeff[]".encode("utf-16"),
    "latin-1": '[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"),
    "truncated json": b'[{"role": "user", "content": "',
    "truncated jsonl": b'{"role": "user", "content": "hi"}\n{"role": "assistant", "cont',
    "numeric call id": b'{"messages": [{"role": "tool", "content": "x", "tool_call_id": 5}]}',
    "call without function": b'[{"role": "assistant", "tool_calls": [{"id": "a"}]}]',
    "bare image block": b'[{"role": "user", "content": [{"type": "image"}]}]',
    "huge line": b'[{"role": "user", "content": "' + b" " * 200_000 + b'x"}]',
    "deep list": ("[" * 5000 + "]" * 5000).encode(),
    "deep object": ('{"a":' * 3000 + "1" + "}" * 3000).encode(),
    "lone surrogate": SURROGATE_JSON.encode(),
    "lone surrogate key": b'[{"role": "user", "content": "x", "\\udc00": 1}]',
    "claude code odd content": b'{"type": "user", "uuid": "1", "message": {"content": 1}}\n' * 2,
    "duplicate call ids": json.dumps(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "2"},
        ]
    ).encode(),
    "mini invalid regex": _mini("("),
    "mini regex not text": _mini(["("]),
    "mini empty regex": _mini(""),
    "mini catastrophic regex": _mini("(a|aa)+$"),
    "swe odd history": b'{"history": [1, "two", null]}',
    "swe odd ids": b'{"history": [{"role": "tool", "content": "x", "tool_call_ids": [1]}]}',
    "nan and infinity": b'[{"role": "user", "content": NaN, "name": Infinity}]',
    "huge number": b'[{"role": "user", "content": "x", "tokens": 1' + b"0" * 5000 + b"}]",
}

_HOSTILE_BYTES = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
)


def _never_internal(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    for suffix in (".json", ".jsonl", ".traj"):
        src = tmp_path / f"input{suffix}"
        src.write_bytes(data)
        for args in (
            ["count", str(src), "--counter", "approx"],
            ["compact", str(src), "--target", "50", "--counter", "approx", "--dry-run"],
            ["compact", str(src), "--target", "400", "--to", "anthropic", "--dry-run"],
            ["replay", str(src), "--window", "300", "--counter", "approx"],
        ):
            result = call(capsys, *args)
            assert result.returncode in (0, 1, 2), (args, data[:300], result.stderr)
            assert "internal error" not in result.stderr, (args, data[:300], result.stderr)
            if result.returncode == 2:
                assert len(result.stderr.strip().splitlines()) >= 1
                assert "Traceback" not in result.stderr


_FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_FUZZ
@given(data=_mutated())
def test_fuzz_odd_types_in_every_field_never_exit_70(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    _never_internal(tmp_path, capsys, data)


@_FUZZ
@given(data=_HOSTILE_BYTES)
def test_fuzz_hostile_bytes_never_exit_70(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    _never_internal(tmp_path, capsys, data)


@pytest.mark.parametrize("name", list(CORPUS))
def test_hostile_corpus_never_exit_70(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _never_internal(tmp_path, capsys, CORPUS[name])


# -- hostile --store URLs ----------------------------------------------------------------------

_PART = st.text(max_size=12).map(lambda t: quote(t, safe=""))
_RAW_PASSWORDS = st.sampled_from(["pa#ss", "pa/ss", "pa?ss", "p%zz", "pa?x=1", "a@b", ":", "%"])
_OPTIONS = st.sampled_from(
    ["options", "sslmode", "application_name", "connect_timeout", "password", "client_encoding",
     "target_session_attrs", "gssencmode", "keepalives", "no_such_option"]
)  # fmt: skip


@st.composite
def _store_urls(draw: st.DrawFn, port: int) -> str:
    """A --store value: hostile, but never naming a host other than the test server (the
    tests never reach the network), or a hostile non-PostgreSQL value."""
    kind = draw(st.sampled_from(["postgresql", "postgresql", "postgresql", "other"]))
    if kind == "other":
        return draw(
            st.one_of(
                st.text(max_size=30).filter(lambda t: "\x00" not in t),
                st.builds(lambda t: "file://" + t, st.text(max_size=20)),
                st.builds(lambda t: "mysql://" + t, _PART),
                st.just(""),
            )
        )
    user = draw(st.one_of(st.just("compaction"), _PART))
    password = draw(
        st.one_of(st.just(""), _PART.map(lambda p: ":" + p), _RAW_PASSWORDS.map(lambda p: ":" + p))
    )
    db = draw(st.one_of(st.just("postgres"), _PART))
    query = "&".join(
        f"{key}={value}" for key, value in draw(st.lists(st.tuples(_OPTIONS, _PART), max_size=3))
    )
    return f"postgresql://{user}{password}@127.0.0.1:{port}/{db}" + (f"?{query}" if query else "")


@pytest.mark.postgres
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_fuzz_hostile_store_urls_never_exit_70(
    postgres_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    url = data.draw(_store_urls(postgres_server.port))
    # --retry-seconds 0: a URL the server cannot serve fails at its first attempt, so the
    # test's time never depends on a retry budget.
    fast = ["--retry-seconds", "0", "--store", url]
    for args in (["session", "list", *fast], ["session", "show", "x", *fast]):
        result = call(capsys, *args)
        assert result.returncode in (0, 2), (url, result.stderr)
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr
        if result.returncode == 2:
            assert len(result.stderr.strip().splitlines()) == 1, (url, result.stderr)


# -- inputs that are not regular files, or nested too deeply --------------------------------


def _file_options(good: Path, store: Path) -> dict[str, Any]:
    """Every option that reads a file: a command line with ``{}`` where the file goes."""
    return {
        "count FILE": ["count", "{}", "--counter", "approx"],
        "compact FILE": ["compact", "{}", "--target", "100", "--counter", "approx", "--dry-run"],
        "replay FILE": ["replay", "{}", "--window", "4000", "--counter", "approx"],
        "compact --config": ["compact", str(good), "--target", "100", "--config", "{}",
                             "--dry-run"],
        "replay --config": ["replay", str(good), "--window", "4000", "--config", "{}"],
        "replay --prices": ["replay", str(good), "--window", "4000", "--price", "m",
                            "--prices", "{}"],
        "session import": ["session", "import", "{}", "--store", str(store)],
    }  # fmt: skip


def _hostile_inputs(tmp_path: Path) -> dict[str, Path]:
    import os

    good = tmp_path / "good.json"
    good.write_bytes(EXAMPLE.read_bytes())
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # no writer: a read of it would block for ever
    links = {"symlink to /dev/zero": "/dev/zero", "symlink to a FIFO": fifo,
             "symlink to a good file": good}  # fmt: skip
    for n, target in enumerate(links.values()):
        (tmp_path / f"link{n}.json").symlink_to(target)
    deep = tmp_path / "deep.json"
    deep.write_text(_deep(100_000))
    deep_toml = tmp_path / "deep.toml"
    deep_toml.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    return {
        "character device": Path("/dev/zero"),
        "FIFO": fifo,
        **{name: tmp_path / f"link{n}.json" for n, name in enumerate(links)},
        "directory": tmp_path,
        "deeply nested JSON": deep,
        "deeply nested TOML": deep_toml,
    }


def test_every_option_that_reads_a_file_refuses_devices_fifos_links_and_deep_nesting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import signal

    inputs = _hostile_inputs(tmp_path)

    def stuck(*_: object) -> None:
        raise TimeoutError("a read blocked (a FIFO) or did not end (a device)")

    previous = signal.signal(signal.SIGALRM, stuck)
    try:
        for option, template in _file_options(inputs["symlink to a good file"].resolve(),
                                              tmp_path / "store").items():  # fmt: skip
            for kind, path in inputs.items():
                if kind == "directory" and option.endswith("FILE"):
                    continue  # a directory of transcripts is searched: a valid input
                signal.alarm(30)
                args = [str(path) if a == "{}" else a for a in template]
                line = one_line_error(call(capsys, *args))
                signal.alarm(0)
                assert str(path) in line, (option, kind, line)
                assert "internal error" not in line
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_stdin_is_read_up_to_a_bound(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    from compaction._cli import inputs

    monkeypatch.setattr(inputs, "MAX_TRANSCRIPT_BYTES", 1 << 20)
    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(zero))
        line = one_line_error(call(capsys, "count", "-", "--counter", "approx"))
    assert "<stdin>: too big: more than 1 MiB" in line


def test_a_symlink_to_a_directory_is_not_searched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.json").write_bytes(EXAMPLE.read_bytes())
    link = tmp_path / "link"
    link.symlink_to(logs)
    assert call(capsys, "count", str(logs), "--counter", "approx").returncode == 0
    line = one_line_error(call(capsys, "count", str(link), "--counter", "approx"))
    assert f"{link}: is a symlink; refusing to follow it" in line


# -- every reader, on mutated real shapes --------------------------------------------------

_LOG_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats" / "logs"
_SHARED_LOGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "logs"


def _seeds() -> list[Path]:
    """One file of every agent-log shape we have: the hand-made fixtures, and the public logs
    small enough to mutate quickly (when present)."""
    found = [p for p in _LOG_FIXTURES.rglob("*") if p.is_file()]
    if _SHARED_LOGS.is_dir():
        found += [
            p
            for p in _SHARED_LOGS.glob("*/*")
            if p.is_file() and p.suffix in (".json", ".jsonl") and p.stat().st_size < 40_000
        ]
    return sorted(found)


_SEEDS = _seeds()


def _nodes(value: Any, limit: int = 3000) -> list[tuple[Any, Any]]:
    """(container, key) of every value inside ``value``, breadth first, at most ``limit``."""
    out: list[tuple[Any, Any]] = []
    queue = [value] if isinstance(value, dict | list) else []
    while queue and len(out) < limit:
        item = queue.pop(0)
        keys = list(item) if isinstance(item, dict) else range(len(item))
        for key in keys:
            out.append((item, key))
            if isinstance(item[key], dict | list):
                queue.append(item[key])
    return out


@st.composite
def _mutated_log(draw: st.DrawFn) -> tuple[str, bytes]:
    """A real agent-log shape with one value replaced, removed, or the file cut short."""
    path = draw(st.sampled_from(_SEEDS))
    text = path.read_text()
    how = draw(st.sampled_from(["odd", "odd", "delete", "cut"]))
    if how == "cut":
        return path.name, text.encode()[: draw(st.integers(1, max(1, len(text) - 1)))]
    jsonl = path.suffix == ".jsonl"
    docs = [json.loads(x) for x in text.split("\n") if x.strip()] if jsonl else [json.loads(text)]
    doc = docs[draw(st.integers(0, len(docs) - 1))]
    nodes = _nodes(doc)
    if nodes:
        container, key = draw(st.sampled_from(nodes))
        if how == "delete":
            del container[key]
        else:
            container[key] = draw(_ODD)
    if jsonl:
        return path.name, "".join(json.dumps(d) + "\n" for d in docs).encode()
    return path.name, json.dumps(docs[0]).encode()


def _reader_names() -> list[str]:
    from compaction.formats.registry import readers

    return [r.name for r in readers()]


@pytest.mark.skipif(not _SEEDS, reason="no agent-log fixtures")
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_mutated_log(), forced=st.sampled_from(_reader_names()))
def test_fuzz_every_reader_on_mutated_agent_logs_never_exit_70(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, bytes], forced: str
) -> None:
    name, data = case
    src = tmp_path / name
    src.write_bytes(data)
    commands = [
        ["count", str(src), "--counter", "approx"],
        ["compact", str(src), "--target", "60", "--counter", "approx", "--dry-run"],
        ["replay", str(src), "--window", "400", "--counter", "approx"],
        ["formats", str(src)],
    ]
    commands.append(["count", str(src), "--counter", "approx", "--format", forced])
    for args in commands:
        result = call(capsys, *args)
        assert result.returncode in (0, 1, 2), (args, data[:300], result.stderr)
        assert "internal error" not in result.stderr, (args, data[:300], result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", list(CORPUS))
def test_hostile_corpus_forced_through_every_reader_never_exit_70(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "input.jsonl"
    src.write_bytes(CORPUS[name])
    for fmt in _reader_names():
        result = call(capsys, "count", str(src), "--counter", "approx", "--format", fmt)
        assert result.returncode in (0, 2), (fmt, result.stderr)
        assert "internal error" not in result.stderr, (fmt, result.stderr)


def test_formats_opens_a_file_as_every_command_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `compaction formats FILE` says what a file is read as: it must not block on a FIFO,
    # read a device for ever, or answer for whatever file a symlink points to.
    import signal

    inputs = _hostile_inputs(tmp_path)

    def stuck(*_: object) -> None:
        raise TimeoutError("a read blocked (a FIFO) or did not end (a device)")

    previous = signal.signal(signal.SIGALRM, stuck)
    try:
        for kind, path in inputs.items():
            signal.alarm(30)
            result = call(capsys, "formats", str(path))
            signal.alarm(0)
            assert result.returncode == 2, (kind, result.stdout, result.stderr)
            assert "Traceback" not in result.stderr and "internal error" not in result.stderr
            line = result.stdout.strip()
            assert line.startswith(f"error: {path}: "), (kind, line)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    good = call(capsys, "formats", str(tmp_path / "good.json"))
    assert good.returncode == 0 and good.stdout.startswith(f"{tmp_path / 'good.json'}: ")
