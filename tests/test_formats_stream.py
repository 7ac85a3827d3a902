"""A file parsed from its stream (a JSONL log a line at a time) reads exactly as its whole
text did: the same records, bad lines, errors and fallbacks, and the CLI keeps its checks."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction._reading import InputFileError
from compaction.formats import FormatError, load, loads
from compaction.formats._stream import parse_stream
from compaction.formats.detect import Interning, decode, parse_text

from .conftest import TRANSCRIPTS


def _whole(data: bytes) -> Any:
    """What the whole-text parse answers for ``data``: its parts, or its error."""
    try:
        doc = parse_text(decode(data, "f"), "f")
    except FormatError as exc:
        return ("error", str(exc))
    return (doc.value, doc.records, doc.bad, doc.json_error, doc.text)


def _streamed(data: bytes) -> Any:
    try:
        doc = parse_stream(io.BytesIO(data), "f")
    except FormatError as exc:
        return ("error", str(exc))
    return (doc.value, doc.records, doc.bad, doc.json_error, doc.text)


_LINE = st.one_of(
    st.dictionaries(st.text(max_size=5), st.text(max_size=8) | st.integers(), max_size=3).map(
        lambda d: json.dumps(d, ensure_ascii=False).encode()
    ),
    st.sampled_from(
        [
            b"",
            b"   ",
            b"\r",
            b"\x0b",
            b"[1, 2]",
            b"7",
            b'{"a": 1',
            b"not json",
            b'{"s": "\\ud800"}',
            b"\xef\xbb\xbf{}",
            b"\xff\xfe",
            b'{"a": "\xe2\x82"}',
            b"\x00",
            b"[" * 120 + b"]" * 120,
            b'{"u": "\xe2\x80\xa8 \xf0\x9f\x99\x82"}',
            b'{"k": 1, "k": 2}',
        ]
    ),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_LINE, max_size=8),
    bom=st.booleans(),
    end=st.sampled_from([b"\n", b"\r\n"]),
)
def test_a_stream_parses_as_its_whole_text(lines: list[bytes], bom: bool, end: bytes) -> None:
    data = (b"\xef\xbb\xbf" if bom else b"") + end.join(lines)
    assert _streamed(data) == _whole(data)


def test_a_late_undecodable_byte_is_named_at_its_offset_in_the_file() -> None:
    data = b'{"a": 1}\n' * 3 + b'{"b": "\xff"}\n'
    expected = _whole(data)
    assert expected[0] == "error" and f"offset {9 * 3 + 7}" in expected[1]
    assert _streamed(data) == expected


def test_interning_parses_as_json_loads() -> None:
    text = '{"a": [{"type": "text", "type": "tool"}, "x"], "\\u00e9": 1.5, "n": null}'
    parsed = Interning().loads(text)
    assert parsed == json.loads(text)
    assert list(parsed) == list(json.loads(text))
    with pytest.raises(json.JSONDecodeError, match="BOM"):
        Interning().loads("\ufeff{}")


def test_a_stream_stops_at_its_limit() -> None:
    data = b'{"role": "user", "content": "hi"}\n' * 10
    with pytest.raises(InputFileError, match="grew past"):
        parse_stream(io.BytesIO(data), "f", limit=len(data) - 1)
    assert parse_stream(io.BytesIO(data), "f", limit=len(data)).records is not None


def _real() -> list[Path]:
    if not TRANSCRIPTS.is_dir():
        return []
    return sorted(p for p in TRANSCRIPTS.rglob("*") if p.suffix in {".json", ".jsonl", ".traj"})


@pytest.mark.skipif(not _real(), reason=f"real transcripts not present at {TRANSCRIPTS}")
@pytest.mark.parametrize("path", _real(), ids=lambda p: p.name)
def test_every_real_transcript_loads_as_from_its_text(path: Path) -> None:
    data = path.read_bytes()
    assert _streamed(data) == _whole(data)
    assert repr(load(path)) == repr(loads(decode(data, str(path)), str(path)))


def test_the_cli_still_refuses_links_and_fifos(tmp_path: Path) -> None:
    from compaction._cli.inputs import load as cli_load

    real = tmp_path / "t.jsonl"
    real.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    assert [m.content for m in cli_load(real).messages] == ["hi", "yo"]
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(InputFileError, match="symlink"):
        cli_load(link)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.jsonl"
        os.mkfifo(fifo)
        with pytest.raises(InputFileError, match="FIFO"):
            cli_load(fifo)


def test_a_path_with_no_size_is_read_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pipe (process substitution, a FIFO) is read whole, as a file would be; a device that
    # never ends is refused once the bound is passed, not read until memory runs out.
    import threading

    from compaction.formats import _stream

    chat = [{"role": "user", "content": "Fix the build."}, {"role": "assistant", "content": "ok"}]
    fifo = tmp_path / "chat.json"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as out:
            json.dump(chat, out)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        loaded = load(fifo)
    finally:
        writer.join(timeout=10)
    assert [m.content for m in loaded.messages] == ["Fix the build.", "ok"]

    monkeypatch.setattr(_stream, "MAX_UNSIZED_BYTES", 1 << 20)
    with pytest.raises(InputFileError, match="too big: more than 1 MiB"):
        load("/dev/zero")
