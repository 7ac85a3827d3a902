"""LangChain v1 context management, side by side, in a replay of the real transcripts.

Each transcript is replayed as a LangChain ``create_agent`` run would have made its model
calls: before each assistant message of the log, the model is called with the history so far
(the transcript's system message as ``system_message``). Three ways to keep that request in the
window, each driven through its own LangChain hook exactly as the agent graph drives it:

- **CompactionMiddleware** (ours, ``wrap_model_call``): the state keeps everything; the request
  is compacted at 70% of the window down to 40% (the default ladder, offline summariser);
- **SummarizationMiddleware** (``before_model``): when the state reaches 70% of the window, it
  is *replaced* by a summary plus the newest messages (``keep`` = 40% of the window), and the
  run goes on from that state. Its summariser is our offline extractive one (through its
  ``summarizer=`` hook), so the two summaries cost the same and no model is called;
- **ClearToolUsesEdit** (``ContextEditingMiddleware``'s edit, ``wrap_model_call``): above 70% of
  the window, every tool result but the newest 3 is replaced by ``[cleared]`` in the request;
- and, for scale, **no compaction** (the whole history every call).

Every side counts with the same tiktoken encoding and per-message envelope (the peers through
``benchmarks.common.peers.langchain_counter``, memoised by content here so the replay measures
what is sent, not LangChain's counting speed). Per call we record the tokens sent, the share of
them that repeats the previous request's start unchanged (what a provider's prompt cache can
reuse), whether the request is over the window, and whether the task (the first user message a
person wrote) is still in it.

``run(transcripts_dir)`` answers one row per contender and format (and for all transcripts);
``python -m benchmarks.frameworks.suite`` prints them. It is the ``frameworks`` suite of
``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.frameworks"

from compaction.check import RequestMeter, call_points, original_task, task_kept
from compaction.messages import Message
from compaction.tokens import TiktokenCounter

from ..common.data import DEFAULT_TRANSCRIPTS, Case, load_cases
from ..common.measure import progress, ratio
from ..common.peers import available, langchain_counter

__all__ = ["CONTENDERS", "replay_case", "requests", "run"]

COMPACT_AT = 0.7
COMPACT_TO = 0.4
CLEAR_KEEP = 3


def _memo(count: Callable[[Any], int]) -> Callable[[Any], int]:
    cache: dict[tuple[str, str, str], int] = {}

    def counted(message: Any) -> int:
        content = (
            message.content if isinstance(message.content, str) else json.dumps(message.content)
        )
        key = (message.type, content, repr(getattr(message, "tool_calls", None)))
        value = cache.get(key)
        if value is None:
            value = cache[key] = count(message)
        return value

    counted.__annotations__ = dict(count.__annotations__)
    return counted


class _Request:
    """What one model call was sent."""

    __slots__ = ("messages", "system")

    def __init__(self, system: Any, messages: Sequence[Any]) -> None:
        self.system = system
        self.messages = list(messages)


def _model_request(system: Any, messages: list[Any]) -> Any:
    from langchain.agents.middleware import ModelRequest

    return ModelRequest(
        model=None,  # type: ignore[arg-type]  (never called: the handler records the request)
        messages=messages,
        system_message=system,
        tools=[],
        state={"messages": messages},  # type: ignore[typeddict-item]
        runtime=None,  # type: ignore[arg-type]
    )


def _capture(
    sent: list[_Request], reported: Callable[[_Request], int] | None = None
) -> Callable[[Any], Any]:
    from langchain.agents.middleware import ModelResponse
    from langchain_core.messages import AIMessage

    def handler(request: Any) -> Any:
        sent.append(_Request(request.system_message, request.messages))
        if reported is None:
            return ModelResponse(result=[AIMessage("")])
        tokens = reported(sent[-1])
        usage = {"input_tokens": tokens, "output_tokens": 1, "total_tokens": tokens + 1}
        return ModelResponse(result=[AIMessage("", usage_metadata=usage)])  # type: ignore[arg-type]

    return handler


def _ours(share: float | None) -> Callable[..., Any]:
    """Our middleware; the model reports ``share`` of each request's size as its input tokens
    (None: no usage; 0: a fake model or local server; 0.5: an undercounting one)."""

    def contender(window: int, counter: TiktokenCounter, count: Callable[[Any], int]) -> Any:
        from compaction.integrations.langchain import CompactionMiddleware

        middleware = CompactionMiddleware(
            window=window, compact_at=COMPACT_AT, compact_to=COMPACT_TO, counter=counter
        )
        reported = None
        if share is not None:

            def reported(request: _Request) -> int:
                full = ([request.system] if request.system is not None else []) + request.messages
                return int(share * sum(count(m) for m in full))

        def call(system: Any, state: list[Any], sent: list[_Request]) -> None:
            middleware.wrap_model_call(_model_request(system, state), _capture(sent, reported))

        return call

    return contender


ours = _ours(None)


def summarization(window: int, counter: TiktokenCounter, count: Callable[[Any], int]) -> Any:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import RemoveMessage, get_buffer_string

    from compaction.summarizers import ExtractiveSummarizer

    extractive = ExtractiveSummarizer()
    middleware = SummarizationMiddleware(
        GenericFakeChatModel(messages=iter(())),
        trigger=("tokens", int(COMPACT_AT * window)),
        keep=("tokens", int(COMPACT_TO * window)),
        token_counter=lambda ms: sum(count(m) for m in ms),
        summarizer=lambda ms: extractive(get_buffer_string(ms)),
    )

    def call(system: Any, state: list[Any], sent: list[_Request]) -> None:
        # As in create_agent: the system prompt is not in the state, so neither its trigger
        # nor its summary sees it; the model is sent it in front of the state.
        update = middleware.before_model({"messages": state}, None)  # type: ignore[arg-type]
        if update:
            kept = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
            state[:] = kept  # the graph state is replaced: what was summarised is gone
        sent.append(_Request(system, state))

    return call


def clear_tool_uses(window: int, counter: TiktokenCounter, count: Callable[[Any], int]) -> Any:
    from langchain.agents.middleware import ClearToolUsesEdit

    edit = ClearToolUsesEdit(trigger=int(COMPACT_AT * window), keep=CLEAR_KEEP)

    def call(system: Any, state: list[Any], sent: list[_Request]) -> None:
        # What ContextEditingMiddleware.wrap_model_call does, on a shallow copy (it deep-copies;
        # the edit replaces messages, it never changes one, so the result is the same).
        messages = list(state)
        edit.apply(messages, count_tokens=lambda ms: sum(count(m) for m in ms))
        sent.append(_Request(system, messages))

    return call


def no_compaction(window: int, counter: TiktokenCounter, count: Callable[[Any], int]) -> Any:
    def call(system: Any, state: list[Any], sent: list[_Request]) -> None:
        sent.append(_Request(system, state))

    return call


CONTENDERS: dict[str, Callable[..., Any]] = {
    "no compaction": no_compaction,
    "CompactionMiddleware (ours)": ours,
    "ours, model reports 0 usage": _ours(0.0),
    "ours, model reports half": _ours(0.5),
    "SummarizationMiddleware": summarization,
    "ClearToolUsesEdit": clear_tool_uses,
}


def _task_sent(task: Message, sent: Sequence[Any]) -> bool:
    """Whether the task went out verbatim, or cut in its middle with head and tail kept
    (:func:`compaction.check.task_kept`, on the LangChain messages' text)."""
    as_text = [Message("user", m.text) for m in sent]
    return task_kept(task, as_text) is not None


def requests(
    case: Case, contender: str, counter: TiktokenCounter, count: Callable[[Any], int]
) -> Iterator[tuple[int, list[Any], list[Any]]]:
    """Feed one transcript call by call to one contender, as an agent graph would: per model
    call, the index of the assistant message that answered it, the request (system prompt
    first, when there is one) and the request's conversation part."""
    from compaction.integrations.langchain import to_langchain

    window = max(1, case.tokens // 2)
    lc = to_langchain(case.messages)
    system = lc[0] if case.messages and case.messages[0].role == "system" else None
    body = lc[1:] if system is not None else lc
    offset = 1 if system is not None else 0
    call = CONTENDERS[contender](window, counter, count)
    sent: list[_Request] = []
    state: list[Any] = []
    fed = 0
    for point in call_points(case.messages):
        stop = point - offset
        state.extend(body[fed:stop])
        fed = stop
        call(system, state, sent)
        request = sent.pop()
        full = ([request.system] if request.system is not None else []) + request.messages
        yield point, full, request.messages


def replay_case(case: Case, contender: str) -> dict[str, Any]:
    """Replay one transcript with one contender; answer its figures."""
    counter = TiktokenCounter()
    count = _memo(langchain_counter(counter))
    window = max(1, case.tokens // 2)
    task = original_task(case.messages)
    meter: RequestMeter[Any] = RequestMeter(count, window)
    started = time.perf_counter()
    for _, full, messages in requests(case, contender, counter, count):
        meter.measure(full, task=None if task is None else _task_sent(task, messages))
    t = meter.totals
    return {
        "name": case.name,
        "format": case.format,
        "contender": contender,
        "window": window,
        "calls": t.calls,
        "tokens_sent": t.tokens_sent,
        "prefix_tokens": t.prefix_tokens,
        "over_window": t.over_window,
        "without_task": t.without_task,
        "rewrites": t.rewrites,
        "seconds": time.perf_counter() - started,
    }


def _total(name: str, contender: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    sent = sum(r["tokens_sent"] for r in rows)
    calls = sum(r["calls"] for r in rows)
    return {
        "suite": "frameworks",
        "name": name,
        "contender": contender,
        "files": len(rows),
        "calls": calls,
        "tokens_sent": sent,
        "cache_share": ratio(sum(r["prefix_tokens"] for r in rows), sent),
        "over_window": sum(r["over_window"] for r in rows),
        "without_task": sum(r["without_task"] for r in rows),
        "prompt_rewrites": sum(r["rewrites"] for r in rows),
        "seconds": sum(r["seconds"] for r in rows),
    }


def run(
    transcripts_dir: Path = DEFAULT_TRANSCRIPTS,
    *,
    cases: Sequence[Case] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """One row per contender and transcript format, plus one per contender over all
    transcripts (``files``, ``calls``, ``tokens_sent``, ``cache_share``, ``over_window``,
    ``without_task``, ``prompt_rewrites``, ``seconds``). Empty with a ``skipped`` row when
    LangChain or the transcripts are missing. ``limit`` keeps the smallest files only."""
    reason = available()
    if reason is None and cases is None and not Path(transcripts_dir).is_dir():
        reason = f"no transcripts folder at {transcripts_dir}"
    if reason is not None:
        return [{"suite": "frameworks", "skipped": reason}]
    if cases is None:
        cases, _ = load_cases(Path(transcripts_dir), limit=limit)
    rows: list[dict[str, Any]] = []
    for contender in CONTENDERS:
        mine = [replay_case(case, contender) for case in cases]
        progress(f"frameworks: {len(cases)} transcripts with {contender}")
        for fmt in sorted({r["format"] for r in mine}):
            rows.append(_total(fmt, contender, [r for r in mine if r["format"] == fmt]))
        rows.append(_total("all transcripts", contender, mine))
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    if rows and "skipped" in rows[0]:
        return f"frameworks: skipped ({rows[0]['skipped']})"
    head = (
        "| transcripts | contender | calls | tokens sent | cache share | over window "
        "| calls without the task | prompt rewrites | s |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r['name']} ({r['files']}) | {r['contender']} | {r['calls']:,} "
            f"| {r['tokens_sent']:,} | {r['cache_share']:.1%} | {r['over_window']:,} "
            f"| {r['without_task']:,} | {r['prompt_rewrites']:,} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines)


def suite(ctx: Any) -> list[dict[str, Any]]:
    """The suite entry of ``python -m benchmarks.run`` (see its ``SUITES``)."""
    if not ctx.cases:
        return [{"suite": "frameworks", "skipped": ctx.transcripts_skipped or "no transcripts"}]
    return run(cases=ctx.cases)


def section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The "## LangChain context management" section of RESULTS.md."""
    return [
        "## LangChain context management",
        "",
        "Our `CompactionMiddleware` beside LangChain's own `SummarizationMiddleware` and "
        "`ClearToolUsesEdit`, replaying every transcript with the window at half its largest "
        "request.",
        "",
        markdown(rows),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.frameworks.suite", description=__doc__
    )
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--limit", type=int, default=None, help="only the N smallest files")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import logging

    logging.getLogger("compaction").setLevel(logging.ERROR)
    rows = run(args.transcripts, limit=args.limit)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
