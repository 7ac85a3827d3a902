"""``compaction count``: where a conversation's tokens go, by role, by tool and by message.

Totals are the counter's own sum over the messages, so the by-role rows always add up to the
total; by-tool rows count each tool's results (the tool messages answering its calls) and the
text of the calls' arguments.
"""

from __future__ import annotations

import sys
from typing import Any

from .._text import plural
from .batch import Batch
from .errors import EXIT_BAD_INPUT, EXIT_OK
from .inputs import check_format, load
from .ladder import cached, counter_label
from .render import Table, dump_json, render, say

__all__ = ["count_file", "count_messages", "run"]

_PREVIEW = 60


def _preview(message: Any) -> str:
    text = message.content or " ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


def count_messages(messages: Any, counter: Any, top: int) -> dict[str, Any]:
    """The counts of one conversation, JSON-ready."""
    by_role: dict[str, dict[str, int]] = {}
    by_tool: dict[str, dict[str, int]] = {}
    call_names: dict[str, str] = {}
    sizes = []
    for index, message in enumerate(messages):
        tokens = counter.count(message)
        row = by_role.setdefault(message.role, {"messages": 0, "tokens": 0})
        row["messages"] += 1
        row["tokens"] += tokens
        for call in message.tool_calls:
            call_names[call.id] = call.name
            tool = by_tool.setdefault(
                call.name, {"calls": 0, "argument_tokens": 0, "result_tokens": 0}
            )
            tool["calls"] += 1
            tool["argument_tokens"] += counter.count_text(call.arguments)
        tool_name = None
        if message.role == "tool":
            tool_name = call_names.get(message.tool_call_id or "") or message.name or "(unknown)"
            by_tool.setdefault(tool_name, {"calls": 0, "argument_tokens": 0, "result_tokens": 0})[
                "result_tokens"
            ] += tokens
        sizes.append((tokens, index, message, tool_name))
    sizes.sort(key=lambda item: (-item[0], item[1]))
    largest = [
        {
            "index": index,
            "role": message.role,
            "tool": tool_name or (", ".join(c.name for c in message.tool_calls) or None),
            "tokens": tokens,
            "preview": _preview(message),
        }
        for tokens, index, message, tool_name in sizes[:top]
    ]
    return {
        "messages": len(messages),
        "total": counter.count_messages(messages),
        "by_role": by_role,
        "by_tool": dict(sorted(by_tool.items(), key=lambda kv: -kv[1]["result_tokens"])),
        "largest": largest,
    }


def _share(part: int, total: int) -> str:
    return f"{100 * part / total:.1f}%" if total else "-"


def _print_single(report: dict[str, Any]) -> None:
    total = report["total"]
    say(
        f"{report['file']}: {report['format']}, {report['messages']} messages, "
        f"{total:,} tokens (counter: {report['counter']})",
        sys.stdout,
    )
    for repair in report.get("repairs", ()):
        say(f"repaired while reading: {repair}")
    sys.stdout.write("\n")
    roles = Table(
        ["role", "messages", "tokens", "share"],
        title="by role",
        right=frozenset({"messages", "tokens", "share"}),
    )
    for role, row in sorted(report["by_role"].items(), key=lambda kv: -kv[1]["tokens"]):
        roles.add(role, row["messages"], row["tokens"], _share(row["tokens"], total))
    roles.footer = ("total", report["messages"], total, _share(total, total))
    render(roles)
    if report["by_tool"]:
        tools = Table(
            ["tool", "calls", "argument tokens", "result tokens", "share"],
            title="by tool",
            right=frozenset({"calls", "argument tokens", "result tokens", "share"}),
        )
        for name, row in report["by_tool"].items():
            tools.add(
                name,
                row["calls"],
                row["argument_tokens"],
                row["result_tokens"],
                _share(row["result_tokens"], total),
            )
        render(tools)
    biggest = Table(
        ["#", "role", "tool", "tokens", "share", "text"],
        title=f"largest {len(report['largest'])} messages",
        right=frozenset({"#", "tokens", "share"}),
    )
    for item in report["largest"]:
        biggest.add(
            item["index"],
            item["role"],
            item["tool"] or "",
            item["tokens"],
            _share(item["tokens"], total),
            item["preview"],
        )
    render(biggest)


def _print_summary(reports: list[dict[str, Any]], counter: str) -> None:
    table = Table(
        ["file", "format", "messages", "tokens", "tool results", "largest"],
        title=f"token counts (counter: {counter})",
        right=frozenset({"messages", "tokens", "tool results", "largest"}),
    )
    for r in reports:
        tool_tokens = r["by_role"].get("tool", {}).get("tokens", 0)
        largest = r["largest"][0]["tokens"] if r["largest"] else 0
        table.add(
            r["file"],
            r["format"],
            r["messages"],
            r["total"],
            _share(tool_tokens, r["total"]),
            largest,
        )
    table.footer = (
        plural(len(reports), "file"),
        "",
        sum(r["messages"] for r in reports),
        sum(r["total"] for r in reports),
        "",
        "",
    )
    render(table)


def count_file(
    source: Any, counter_kind: str, encoding: str | None, top: int, format: str | None = None
) -> dict[str, Any]:
    """The report for one file (run in a worker process with ``-j``)."""
    counter = cached("counter", counter_kind, encoding)
    loaded = load(source, format)
    report = {"file": str(source.path), "format": loaded.format, "counter": counter_label(counter)}
    report.update(count_messages(loaded.messages, counter, top))
    report["repairs"] = [str(r) for r in loaded.repairs]
    return report


def run(args: Any) -> int:
    check_format(args.format)
    counter = cached("counter", args.counter, args.encoding)
    batch = Batch(args.files, "counting", args.jobs, args.verbose)
    single = batch.single
    with batch:
        work = batch.run(count_file, args.counter, args.encoding, args.top, args.format)
        reports = [r for _, r in work]
    if args.json:
        if single:
            dump_json(reports[0])
        else:
            dump_json(
                {
                    "files": reports,
                    "problems": batch.problems,
                    "total": sum(r["total"] for r in reports),
                }
            )
    elif single:
        _print_single(reports[0])
    else:
        _print_summary(reports, counter_label(counter))
    batch.say_problems()
    return EXIT_BAD_INPUT if batch.failed else EXIT_OK
