"""Peak memory of ``compaction compact`` on a ~200 MB transcript, against the file's size.

The input is made of real transcripts: the shared Claude Code sessions (the three long main
logs, sorted by name) laid end to end as often as needed to reach the size, every copy with
its ids made its own (record and message ids, tool-call ids and the results naming them) and
every text opening with a word of its own, so no copy merges with or caches like another. The
same conversation is also written as an OpenAI request (``{"model", "messages": [...]}``, one
JSON document) and as OpenAI JSONL (one message a line), since those are read by other paths.

Each measure is a fresh interpreter whose peak resident set size (``ru_maxrss`` of the waited
child: ``resource.getrusage(RUSAGE_CHILDREN)`` in a wrapper process of its own) is read:

- ``compact``: ``python -m compaction compact FILE --target N -o OUT`` (the user's command);
- ``load``: a process that only reads the file (``compaction.formats.load``);
- ``count``: one that reads it and counts its tokens (``TiktokenCounter().count_messages``).

``python -m benchmarks.scaling.cli_memory --mb 200 [--formats claude-code openai openai-jsonl]
[--keep DIR] [--code CHECKOUT]`` prints one row per format; ``--json`` the raw figures;
``--code`` measures another checkout's ``compaction`` (before and after a change).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = ROOT.parent / "shared" / "data" / "transcripts" / "claude-code"
TARGET = 200_000
FORMATS = ("claude-code", "openai", "openai-jsonl")

_ID_KEYS = ("uuid", "parentUuid", "leafUuid", "logicalParentUuid", "sourceToolAssistantUUID")


def _sessions() -> list[Path]:
    return sorted(p for p in TRANSCRIPTS.glob("*.jsonl") if p.stat().st_size > 1_000_000)


def _distinct_content(content: Any, word: str, suffix: str) -> Any:
    if isinstance(content, str):
        return f"{word} {content}" if content.strip() else content
    if not isinstance(content, list):
        return content
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            block["text"] = f"{word} {block['text']}"
        elif kind == "tool_use" and isinstance(block.get("id"), str):
            block["id"] += suffix
        elif kind == "tool_result":
            if isinstance(block.get("tool_use_id"), str):
                block["tool_use_id"] += suffix
            block["content"] = _distinct_content(block.get("content"), word, suffix)
    return content


def _claude_code_lines(size: int) -> Iterator[bytes]:
    """Lines of one Claude Code log of at least ``size`` bytes (see the module docstring)."""
    sessions = _sessions()
    if not sessions:
        raise SystemExit(f"no Claude Code sessions in {TRANSCRIPTS}")
    written = 0
    copy = 0
    while written < size:
        for path in sessions:
            suffix = f"-c{copy}"
            for raw in path.read_bytes().split(b"\n"):
                if not raw.strip():
                    continue
                record = json.loads(raw)
                for key in _ID_KEYS:
                    if isinstance(record.get(key), str):
                        record[key] += suffix
                message = record.get("message")
                if isinstance(message, dict):
                    if isinstance(message.get("id"), str):
                        message["id"] += suffix
                    word = f"copy{copy}"
                    message["content"] = _distinct_content(message.get("content"), word, suffix)
                line = json.dumps(record, ensure_ascii=False).encode() + b"\n"
                written += len(line)
                yield line
            copy += 1
            if written >= size:
                return


def build(directory: Path, mb: int) -> dict[str, Path]:
    """The inputs, each about ``mb`` MB (1e6 bytes), written once into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    size = mb * 1_000_000
    out = {"claude-code": directory / f"claude-code-{mb}mb.jsonl"}
    if not out["claude-code"].exists():
        with open(out["claude-code"], "wb") as f:
            f.writelines(_claude_code_lines(size))
    openai_json = directory / f"openai-{mb}mb.json"
    openai_jsonl = directory / f"openai-{mb}mb.jsonl"
    if not openai_json.exists() or not openai_jsonl.exists():
        # The same conversation in the OpenAI shape (far smaller: no log records), copied
        # again, ids and texts made distinct, to the size; built in a process of its own.
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.scaling.cli_memory",
                "--openai-from",
                str(out["claude-code"]),
                str(openai_json),
                str(openai_jsonl),
                str(size),
            ],
            cwd=ROOT,
            check=True,
        )
    out["openai"] = openai_json
    out["openai-jsonl"] = openai_jsonl
    return out


def _openai_copy(message: dict[str, Any], copy: int) -> dict[str, Any]:
    m = json.loads(json.dumps(message))
    suffix = f"-o{copy}"
    if isinstance(m.get("content"), str) and m["content"].strip():
        m["content"] = f"again{copy} {m['content']}"
    for call in m.get("tool_calls") or ():
        call["id"] += suffix
    if isinstance(m.get("tool_call_id"), str):
        m["tool_call_id"] += suffix
    return m


def _write_openai(source: Path, as_json: Path, as_jsonl: Path, size: int) -> None:
    from compaction.adapters.openai import to_openai
    from compaction.formats import load

    messages = to_openai(load(source).messages)
    system = [m for m in messages if m.get("role") == "system"]
    body = [m for m in messages if m.get("role") != "system"]
    with (
        open(as_json, "w", encoding="utf-8") as doc,
        open(as_jsonl, "w", encoding="utf-8") as lines,
    ):
        doc.write('{"model": "gpt-4o", "messages": [')
        written = 0
        first = True
        for m in system:
            text = json.dumps(m, ensure_ascii=False)
            doc.write(text)
            lines.write(text + "\n")
            first = False
        copy = 0
        while written < size:
            for m in body:
                text = json.dumps(_openai_copy(m, copy) if copy else m, ensure_ascii=False)
                doc.write(text if first else ", " + text)
                lines.write(text + "\n")
                first = False
                written += len(text.encode()) + 1
            copy += 1
        doc.write("]}\n")


_LOAD = "import sys\nfrom compaction.formats import load\nloaded = load(sys.argv[1])\n"
_COUNT = (
    _LOAD + "from compaction.tokens import TiktokenCounter\n"
    "print(TiktokenCounter().count_messages(loaded.messages))\n"
)

#: Runs its arguments as a child and prints the child's peak RSS in bytes (Linux: kB * 1024).
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "if done.returncode: sys.exit(done.returncode)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(peak if sys.platform == 'darwin' else peak * 1024)\n"
)


def peak_rss(argv: list[str], code: Path = ROOT) -> int:
    """Peak resident set size, in bytes, of ``argv`` run to the end in a fresh process, with
    the ``compaction`` of the checkout ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *argv],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return int(done.stdout.split()[-1])


def measure(path: Path, out: Path, code: Path = ROOT) -> dict[str, int]:
    py = sys.executable
    compact = [py, "-m", "compaction", "compact", str(path), "--target", str(TARGET)]
    return {
        "bytes": path.stat().st_size,
        "load": peak_rss([py, "-c", _LOAD, str(path)], code),
        "count": peak_rss([py, "-c", _COUNT, str(path)], code),
        "compact": peak_rss([*compact, "-o", str(out)], code),
    }


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--openai-from":
        _write_openai(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="input size in MB (default 200)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--keep", type=Path, help="build (or reuse) the inputs in this folder")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the checkout whose compaction is measured (default: this one)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = build(args.keep or Path(tmp), args.mb)
        results = {}
        for name in args.formats:
            # Claude Code logs are written back as one Anthropic request; OpenAI JSONL as JSONL.
            suffix = ".jsonl" if name == "openai-jsonl" else ".json"
            results[name] = measure(inputs[name], Path(tmp) / f"out-{name}{suffix}", args.code)
            if not args.json:
                r = results[name]
                size = r["bytes"]
                cells = "  ".join(
                    f"{k} {r[k] / 2**20:,.0f} MiB ({r[k] / size:.2f}x)"
                    for k in ("load", "count", "compact")
                )
                print(f"{name}: {size / 1e6:,.0f} MB  {cells}", flush=True)
        if args.json:
            print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
