"""What one model call costs in each framework drop-in, as the conversation grows.

An agent calls its drop-in before every model call with its whole history; a drop-in that
converts all of it each time costs O(history) per call and O(history²) per run (measured
at 35-160 ms per call at 5,000 messages before the conversion was made incremental). Each
drop-in is driven through the hook its framework calls, with a window so large that nothing
is compacted (what is measured is following the conversation, not the ladder):

- LangChain: ``CompactionMiddleware.wrap_model_call`` with a ``ModelRequest``;
- pydantic-ai: ``Compaction.prepare_model_request`` with the request context's fields;
- the Agents SDK: ``CompactionFilter`` with a ``CallModelData``, its items rebuilt as equal
  copies every call, as the runner rebuilds its input;
- LiteLLM: ``CompactionHook.async_pre_call_deployment_hook`` with the request's kwargs.

For each size the history is built to that many messages (a tool loop: a call, its output),
then a few more calls each append one call and its output, as an agent does; the figure is
the fastest of those calls, with the garbage collector paused as ``timeit`` pauses it (as
``timeit`` advises: on a shared machine the slower calls measure the neighbours, not the code).
Goal: flat, no more than 1.5x from 500 to 5,000 messages.

``python -m benchmarks.integrations.suite`` prints the table; it is the ``integrations`` suite
of ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.integrations"

from ..common.measure import progress

__all__ = ["DRIVERS", "run"]

SIZES = (100, 500, 1000, 2500, 5000)
QUICK_SIZES = (100, 500)
# After a compaction: from 500 (below that, the timed calls alone would fill the window again).
AFTER_SIZES = (500, 1000, 2500, 5000)
QUICK_AFTER_SIZES = (500, 1000)
WINDOW = 100_000_000
CALLS = 41  # timed calls per size (the fastest is reported)
GOAL = 1.5  # at most this many times the cost at 500 messages, at 5,000 ...
CEILING_MS = 1.0  # ... or at most this per call at 5,000


# One event loop for every async call, as in a real agent: asyncio.run() per call would
# measure the loop's start-up (and, in the main thread, a repr of the task it installs as the
# SIGINT handler, which grows with the arguments).
_LOOP = asyncio.new_event_loop()


def _output(i: int) -> str:
    return "".join(f"line {j} of step {i}: ok\n" for j in range(5))


class _LangChain:
    name = "LangChain middleware"

    def __init__(self, window: int = WINDOW) -> None:
        from langchain.agents.middleware import ModelResponse
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        from compaction.integrations.langchain import CompactionMiddleware

        self.middleware = CompactionMiddleware(window=window)
        self.system = SystemMessage("You are a coding agent.")
        self.messages: list[Any] = [HumanMessage("Fix the build.")]
        self.reply = ModelResponse(result=[AIMessage("ok")])

    def grow(self, i: int) -> None:
        from langchain_core.messages import AIMessage, ToolMessage

        call = {"name": "bash", "args": {"cmd": f"make {i}"}, "id": f"c{i}", "type": "tool_call"}
        self.messages += [
            AIMessage("", tool_calls=[call]),
            ToolMessage(_output(i), tool_call_id=f"c{i}"),
        ]

    def prepare(self) -> Any:
        return None

    def call(self, prepared: Any) -> None:
        from langchain.agents.middleware import ModelRequest

        request = ModelRequest(
            model=None,  # type: ignore[arg-type]  (never called)
            messages=self.messages,
            system_message=self.system,
            tools=[],
            state={"messages": self.messages},  # type: ignore[typeddict-item]
            runtime=None,  # type: ignore[arg-type]
        )
        self.middleware.wrap_model_call(request, lambda r: self.reply)


class _PydanticAI:
    name = "pydantic-ai capability"

    def __init__(self, window: int = WINDOW) -> None:
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        from compaction.integrations.pydantic_ai import Compaction

        self.capability = Compaction(window=window)
        self.messages: list[Any] = [ModelRequest([UserPromptPart("Fix the build.")])]
        self.ctx = SimpleNamespace(conversation_id="bench")

    def grow(self, i: int) -> None:
        from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

        self.messages += [
            ModelResponse([ToolCallPart("bash", {"cmd": f"make {i}"}, f"c{i}")]),
            ModelRequest([ToolReturnPart("bash", _output(i), f"c{i}")]),
        ]

    def prepare(self) -> Any:
        # pydantic-ai hands each request its own list of the run's messages (made here,
        # untimed: that cost is the framework's).
        return list(self.messages)

    def call(self, prepared: Any) -> None:
        context = SimpleNamespace(messages=prepared, model=None, model_request_parameters=None)
        _LOOP.run_until_complete(self.capability.prepare_model_request(self.ctx, context))


class _AgentsSDK:
    name = "Agents SDK filter"

    def __init__(self, window: int = WINDOW) -> None:
        from agents import Agent

        from compaction.integrations.openai_agents import CompactionFilter

        self.filter = CompactionFilter(window=window)
        self.agent = Agent(name="bench", instructions="You are a coding agent.")
        self.items: list[Any] = [{"role": "user", "content": "Fix the build."}]

    def grow(self, i: int) -> None:
        self.items += [
            {
                "type": "function_call",
                "call_id": f"c{i}",
                "name": "bash",
                "arguments": json.dumps({"cmd": f"make {i}"}),
            },
            {"type": "function_call_output", "call_id": f"c{i}", "output": _output(i)},
        ]

    def prepare(self) -> Any:
        from agents.run_config import CallModelData, ModelInputData

        # The runner rebuilds its input items every call: equal copies, not the same objects
        # (made here, untimed: that cost is the runner's).
        items = [dict(item) for item in self.items]
        return CallModelData(
            ModelInputData(input=items, instructions="You are a coding agent."), self.agent, None
        )

    def call(self, prepared: Any) -> None:
        _LOOP.run_until_complete(self.filter(prepared))


class _LiteLLM:
    name = "LiteLLM hook"

    def __init__(self, window: int = WINDOW) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from compaction.integrations.litellm import CompactionHook

        self.hook = CompactionHook(window=window)
        self.messages: list[Any] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the build."},
        ]

    def grow(self, i: int) -> None:
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": f"make {i}"})},
        }
        self.messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": _output(i)},
        ]

    def prepare(self) -> Any:
        return None

    def call(self, prepared: Any) -> None:
        kwargs = {"model": "openai/bench-model", "messages": self.messages, "litellm_call_id": "x"}
        _LOOP.run_until_complete(self.hook.async_pre_call_deployment_hook(kwargs, None))


class _Trigger:
    name = "core trigger (Compactor)"

    def __init__(self, window: int = WINDOW) -> None:
        from compaction.messages import Message
        from compaction.trigger import Compactor

        self.compactor = Compactor(None, window)
        self.messages: list[Any] = [
            Message("system", "You are a coding agent."),
            Message("user", "Fix the build."),
        ]

    def grow(self, i: int) -> None:
        from compaction.messages import Message, ToolCall

        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"make {i}"}))
        self.messages += [
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", _output(i), tool_call_id=f"c{i}"),
        ]

    def prepare(self) -> Any:
        return None

    def call(self, prepared: Any) -> None:
        self.compactor.before_call(self.messages)


DRIVERS: tuple[Callable[..., Any], ...] = (
    _Trigger,
    _LangChain,
    _PydanticAI,
    _AgentsSDK,
    _LiteLLM,
)


def measure(make: Callable[..., Any], sizes: Sequence[int]) -> dict[str, Any]:
    """The fastest milliseconds per call at each size, for one drop-in (nothing compacted)."""
    driver = make()
    per_call: dict[int, float] = {}
    grown = 0
    for size in sizes:
        while 1 + 2 * grown < size:
            driver.grow(grown)
            grown += 1
        driver.call(driver.prepare())  # converts what is new since the last size: untimed
        per_call[size] = _fastest(driver, grown)
        grown += CALLS
    return {"integration": driver.name, "ms_per_call": per_call}


def _fastest(driver: Any, grown: int) -> float:
    times = []
    for i in range(CALLS):
        driver.grow(grown + i)
        prepared = driver.prepare()
        # As timeit does: a collection of the whole heap (which grows with the history,
        # framework objects included) lands on whichever call allocates at that moment.
        gc.disable()
        try:
            started = time.perf_counter()
            driver.call(prepared)
            times.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return min(times) * 1000


def _step_tokens() -> float:
    """Tokens one step (a call and its output) adds, as the drop-ins count it."""
    from compaction.adapters.openai import from_openai
    from compaction.tokens import default_counter

    driver = _LiteLLM()
    for i in range(100):
        driver.grow(i)
    return default_counter().count_messages(from_openai(driver.messages)) / 100


def measure_after(make: Callable[..., Any], sizes: Sequence[int]) -> dict[str, Any]:
    """The fastest milliseconds per call at each size, between compactions.

    For each size a new drop-in whose window the history fills to 75%: the first call
    compacts it (the trigger's 70% mark) down to about 40%, and the timed calls that follow
    each append one step, staying below the mark again: what every call after a compaction
    costs until the next one. A compaction during the timed calls, or none before, is an error.
    """
    from compaction import events

    step = _step_tokens()
    per_call: dict[int, float] = {}
    compactions: list[Any] = []

    def seen(sender: Any, **kw: Any) -> None:
        compactions.append(sender)

    events.compacted.connect(seen)
    try:
        for size in sizes:
            steps = (size - 1) // 2
            driver = make(int(steps * step / 0.75))
            for i in range(steps):
                driver.grow(i)
            compactions.clear()
            driver.call(driver.prepare())  # compacts: untimed
            driver.grow(steps)
            driver.call(driver.prepare())  # the first call after it: untimed
            if len(compactions) != 1:
                raise RuntimeError(f"{driver.name}: {len(compactions)} compactions at {size}")
            per_call[size] = _fastest(driver, steps + 1)
            if len(compactions) != 1:
                raise RuntimeError(f"{driver.name}: compacted again while timed at {size}")
    finally:
        events.compacted.disconnect(seen)
    return {"integration": driver.name, "ms_per_call": per_call}


def _judged(row: dict[str, Any], sizes: Sequence[int]) -> dict[str, Any]:
    costs = row["ms_per_call"]
    base = costs.get(500) or costs[sizes[0]]
    row["growth"] = costs[sizes[-1]] / base if base else float("inf")
    row["flat"] = row["growth"] <= GOAL or costs[sizes[-1]] <= CEILING_MS
    return row


def run(*, quick: bool = False) -> list[dict[str, Any]]:
    """One row per drop-in and phase (``"before"`` any compaction, ``"after"`` one):
    ``integration``, ``ms_per_call`` by history size, ``growth`` (the cost at the largest size
    over the cost at 500), ``flat`` (growth within the goal, or the largest size's call within
    the ceiling)."""
    import logging

    logging.getLogger("compaction").setLevel(logging.ERROR)
    sizes = QUICK_SIZES if quick else SIZES
    after_sizes = QUICK_AFTER_SIZES if quick else AFTER_SIZES
    rows = []
    for make in DRIVERS:
        for phase, how, at in (("before", measure, sizes), ("after", measure_after, after_sizes)):
            try:
                row = {"phase": phase, **how(make, at)}
            except ImportError as exc:  # an optional framework that is not installed
                rows.append({"integration": make.__name__, "phase": phase, "skipped": str(exc)})
                break
            rows.append(_judged(row, at))
            progress(f"integrations: {row['integration']} {phase} {row['growth']:.2f}x")
    return rows


def suite(ctx: Any) -> list[dict[str, Any]]:
    """The suite entry of ``python -m benchmarks.run`` (see its ``SUITES``)."""
    return run(quick=bool(getattr(ctx, "quick", False)))


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    done = [r for r in rows if "skipped" not in r]
    sizes = sorted({int(s) for r in done for s in r["ms_per_call"]})
    head = (
        "| drop-in | phase | "
        + " | ".join(f"{s:,} msgs" for s in sizes)
        + " | largest ÷ 500 | flat |"
    )
    lines = [head, "|---|---|" + "---:|" * len(sizes) + "---:|---|"]
    for r in done:
        costs = {int(s): v for s, v in r["ms_per_call"].items()}
        cells = " | ".join(f"{costs[s]:.3f} ms" if s in costs else "" for s in sizes)
        flat = "yes" if r["flat"] else "NO"
        phase = "after a compaction" if r.get("phase") == "after" else "before any"
        lines.append(f"| {r['integration']} | {phase} | {cells} | {r['growth']:.2f}x | {flat} |")
    lines += [f"| {r['integration']} | skipped: {r['skipped']} |" for r in rows if "skipped" in r]
    return "\n".join(lines)


def section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The "## Per-call cost of the framework drop-ins" section of RESULTS.md."""
    return [
        "## Per-call cost of the framework drop-ins",
        "",
        f"The fastest of {CALLS} calls of each drop-in's hook, by the length of the history it "
        "is handed: before any compaction (a window nothing fills), and between compactions "
        "(a window the history fills to 75%, compacted once before the timed calls, each of "
        f"which appends a step). Goal: at most {GOAL}x the cost at 500 messages at 5,000, or "
        f"at most {CEILING_MS:g} ms per call at 5,000.",
        "",
        markdown(rows),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.integrations.suite", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run(quick=args.quick)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
