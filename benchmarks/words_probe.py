"""A quick probe of facts on the shared transcripts (issue 19), until `remembered` lands.

For each transcript the answers are computed from the whole log with plain regular expressions
of their own (not the ledger's parser): identifiers of the task, the last 3 files edited, the
last failing test id, the last error type, the last command. Each is looked for literally in the
messages the default ladder leaves at 25/40/60% of the transcript.

Run: ``PYTHONPATH=$PWD python -m benchmarks.words_probe``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from compaction import default_pipeline
from compaction.formats import load
from compaction.messages import Message
from compaction.tokens import default_counter

ROOT = Path("/work/shared/data/transcripts")
_IDENT = re.compile(r"`([A-Za-z_][\w.]{3,60})`|\b([a-z]+_[a-z_]+[a-z])\b|\b([A-Z][a-z]+[A-Z]\w+)\b")
_EXC = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b")
_FAILED = re.compile(
    r"FAILED ([\w./-]+\.py::[\w\[\]:.-]*\w)|^(?:FAIL|ERROR): (test\w*) \(([\w.]+)\)", re.M
)
_SED_I = re.compile(r"\bsed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+)\s+(\S+)\s*$")
_REDIRECT = re.compile(r"(?<![0-9&])>{1,2}\s*([\w./-]+\.\w+)")


def transcripts() -> dict[str, tuple[Message, ...]]:
    out = {}
    for pattern in ("mini-swe-agent/*.traj.json", "swe-agent/*.traj", "claude-code/*.jsonl"):
        for path in sorted(ROOT.glob(pattern)):
            try:
                out[str(path.relative_to(ROOT))] = tuple(load(path).messages)
            except Exception:
                continue
    return out


def answers(messages: tuple[Message, ...]) -> dict[str, list[str]]:
    task = next(
        (m.content for m in messages if m.role == "user" and not m.meta.get("synthetic")), ""
    )
    idents: list[str] = []
    for match in _IDENT.finditer(task[:3000]):
        name = next(g for g in match.groups() if g)
        if name not in idents:
            idents.append(name)
    edited: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    failing: list[str] = []
    for m in messages:
        for call in m.tool_calls:
            try:
                args = json.loads(call.arguments)
            except ValueError:
                args = {"command": call.arguments}
            if not isinstance(args, dict):
                continue
            if call.name in ("Edit", "Write", "MultiEdit") and isinstance(
                args.get("file_path"), str
            ):
                edited.append(args["file_path"])
            if call.name == "str_replace_editor" and args.get("command") in (
                "create",
                "str_replace",
                "insert",
            ):
                edited.append(str(args.get("path")))
            command = args.get("command")
            if isinstance(command, str) and call.name not in ("str_replace_editor",):
                first = command.strip().split("\n", 1)[0]
                if first:
                    commands.append(first[:60])
                for line in command.split("\n")[:1]:
                    found = _SED_I.search(line) or _REDIRECT.search(line)
                    if found:
                        edited.append(found.group(1))
        if m.role == "tool":
            errors += _EXC.findall(m.content)
            for match in _FAILED.finditer(m.content):
                failing.append(match.group(1) or f"{match.group(2)} ({match.group(3)})")
    last_edited = list(dict.fromkeys(reversed(edited)))[:3]
    return {
        "task": idents[:5],
        "edited": last_edited,
        "failing": failing[-1:],
        "error": errors[-1:],
        "command": commands[-1:],
    }


def run() -> None:
    counter = default_counter()
    pooled: dict[str, list[bool]] = defaultdict(list)
    per_pct: dict[float, list[bool]] = defaultdict(list)
    for messages in transcripts().values():
        want = answers(messages)
        total = counter.count_messages(messages)
        for pct in (0.25, 0.40, 0.60):
            out = default_pipeline(counter=counter).compact(messages, target=int(total * pct))
            text = "\n".join(
                m.content + "".join(c.arguments for c in m.tool_calls) for m in out.messages
            )
            for kind, items in want.items():
                for item in items:
                    hit = item in text
                    pooled[kind].append(hit)
                    per_pct[pct].append(hit)
    every = [x for v in pooled.values() for x in v]
    print(f"pooled: {sum(every) / len(every):.1%} of {len(every)} answers")
    for kind, v in sorted(pooled.items()):
        print(f"  {kind}: {sum(v) / len(v):.1%} of {len(v)}")
    for pct, v in sorted(per_pct.items()):
        print(f"  at {pct:.0%}: {sum(v) / len(v):.1%}")


if __name__ == "__main__":
    run()
