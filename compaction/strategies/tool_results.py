"""ToolResults: old tool output gives way first, replaced by a placeholder.

Tool output is most of a long agent run's tokens, and the oldest of it is what the model needs
least: it has already acted on it. So this layer replaces old results, oldest first, with a
short placeholder that names the tool (and its arguments, when they are short), the error
names the output reported, and the recall id that gets the output back. It never tells the
model to run the tool again: for a write or a shell command that would repeat a side effect
(a second ``rm``, a second deploy). Pinned results (``meta["pinned"]``) are never touched. It
keeps the result's ``tool_call_id``, so the call stays answered and the conversation stays one
a provider accepts, and it stops the moment the conversation is under target, so the newest output
survives longest.

Each message is counted once (the counter caches it) and the running total is integer
arithmetic, never a recount of the whole conversation per replacement: LangChain's tool
clearing recounts per clear and goes quadratic on long runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import ClassVar, Final

from ..checks import check_format, check_names
from ..memory.facts import error_names, exit_code, failing_tests
from ..memory.trace import cut_message
from ..memory.transcript import is_pinned, mark, original_refs, parse, provenance
from ..messages import Message, ToolCall
from ..strategy import Capabilities, Strategy
from ..tokens import TokenCounter
from ..validate import validate

__all__ = ["DEFAULT_PLACEHOLDER", "ToolResults"]

#: The text a cleared result gets. ``{name}`` is the tool, ``{args}`` its arguments (empty when
#: there are none, "…" when they are too long to be worth repeating), ``{call_id}`` the call,
#: ``{ref}`` the recall id of the output (a session's ``recall`` finds it), ``{errors}`` the
#: exception names the output held ("; it reported ValueError" or empty).
DEFAULT_PLACEHOLDER: Final = (
    "[Output of {name}({args}) cleared to save context (recall id {ref}){errors}. "
    "The call already ran; its effects stand.]"
)
#: At most this many error names are repeated in a placeholder.
MAX_ERRORS: Final = 5

#: Arguments longer than this are not repeated in the placeholder: a placeholder that carries
#: a whole file's worth of arguments saves nothing.
MAX_ARGS_CHARS: Final = 120


def _render_args(call: ToolCall | None) -> str:
    if call is None:
        return ""
    text = call.arguments.strip()
    if text in ("", "{}", "null"):
        return ""
    if len(text) > MAX_ARGS_CHARS:
        return "…"
    return text


def _check_int(option: str, value: object, minimum: int, why: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"ToolResults {option} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"ToolResults {option} must be >= {minimum}, got {value}: {why}")
    return value


class ToolResults(Strategy):
    """Replaces old tool results with a placeholder naming the tool, oldest first."""

    name: ClassVar[str] = "tool_results"
    capabilities: ClassVar[Capabilities] = Capabilities(model_call=False, lossless=False)

    def __init__(
        self,
        *,
        keep_steps: int = 1,
        min_tokens: int = 50,
        exclude_tools: Iterable[str] = (),
        placeholder: str = DEFAULT_PLACEHOLDER,
    ) -> None:
        """
        - ``keep_steps``: the newest tool-calling steps (assistant message + its results) that
          are never touched. At least 1: the model has not acted on the newest output yet, so
          clearing it would make it call the same tool again at once.
        - ``min_tokens``: results smaller than this are left alone (a placeholder would save
          next to nothing, and the model loses the text).
        - ``exclude_tools``: tool names whose results are never touched (a single name is
          taken as one name, not as its letters).
        - ``placeholder``: a format string with the fields ``{name}``, ``{args}`` and
          ``{call_id}``, ``{ref}`` and ``{errors}``; checked here, so a typo fails at
          construction, not mid-run.
        """
        self.keep_steps = _check_int(
            "keep_steps",
            keep_steps,
            1,
            "the newest step's output has not been acted on by the model yet, so at least "
            "one step must be kept",
        )
        self.min_tokens = _check_int(
            "min_tokens", min_tokens, 0, "it is a size in tokens below which results are kept"
        )
        self.exclude_tools: frozenset[str] = check_names("ToolResults exclude_tools", exclude_tools)
        # Checked here, bounded in width (a config may supply it), so a typo or a
        # "{name:99999999999}" fails at construction, not as a MemoryError mid-run.
        self.placeholder = check_format(
            "ToolResults placeholder",
            placeholder,
            {"name": "tool", "args": "{}", "call_id": "c", "ref": "sha1:0", "errors": ""},
        )

    # -- the seed-000 protocol -------------------------------------------------------------

    def explain(self) -> str:
        excluded = (
            f", never touching {', '.join(sorted(self.exclude_tools))}"
            if self.exclude_tools
            else ""
        )
        steps = "step" if self.keep_steps == 1 else "steps"
        return (
            "Replaces old tool results, oldest first, with a placeholder naming the tool until "
            f"the conversation is under target, keeping the newest {self.keep_steps} "
            f"tool-calling {steps} and results under {self.min_tokens} tokens{excluded}."
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        """1.0 when some tool result outside the kept steps may still be replaced, else 0.0
        (already replaced, pinned and excluded tools' results do not count)."""
        msgs = tuple(messages)
        steps = [g for g in parse(msgs).groups if g.kind == "step"]
        for group in steps[: max(0, len(steps) - self.keep_steps)]:
            names = {call.id: call.name for call in msgs[group.start].tool_calls}
            for result in msgs[group.start + 1 : group.end]:
                if (provenance(result) or {}).get("kind") == "placeholder" or is_pinned(result):
                    continue
                if names.get(result.tool_call_id or "", result.name) in self.exclude_tools:
                    continue
                return 1.0
        return 0.0

    # -- the work --------------------------------------------------------------------------

    def placeholder_for(self, result: Message, call: ToolCall | None) -> Message:
        """The placeholder message that stands for ``result`` (provenance in ``meta``)."""
        tool_name = call.name if call is not None else (result.name or "tool")
        record = provenance(result)
        # What mark records for it, read once: its own fingerprint reads the whole output.
        refs = original_refs(result)
        ref = str(refs[0])
        # Read once: the text names them and the meta records them all.
        all_errors = error_names(result.content)
        all_failing = failing_tests(result.content)
        reported = all_errors[:MAX_ERRORS] + [f"failing {t}" for t in all_failing[-MAX_ERRORS:]]
        text = self.placeholder.format(
            name=tool_name,
            args=_render_args(call),
            call_id=result.tool_call_id,
            ref=ref,
            errors=f"; it reported {', '.join(reported)}" if reported else "",
        )
        # What the output held that the running ledger carries (exit code, errors, failing
        # tests), recorded in meta so a later note reads it there, not from the cleared text.
        own = (record or {}).get("facts")
        facts = dict(own) if isinstance(own, dict) else {}
        facts.setdefault("exit", exit_code(result.content))
        facts.setdefault("errors", tuple(all_errors))
        facts.setdefault("failing", tuple(all_failing))
        return mark(
            result,
            content=text,
            refs=refs,
            strategy=self.name,
            kind="placeholder",
            replaces=[result],
            tool=tool_name,
            facts=facts,
        )

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        # Invalid input is refused with the provider's own complaint, never made worse.
        validate(messages)
        total = counter.count_messages(messages)  # cached counts: a sum, no encoding
        if total <= target:
            return None
        # Every step opens with an assistant message that calls tools: when there are no more
        # of those than the newest steps kept whole, no output may be cleared, and that is
        # known without parsing the conversation (the scan stops at the first step past them).
        steps_seen = (m for m in messages if m.tool_calls and m.role == "assistant")
        if next(islice(steps_seen, self.keep_steps, None), None) is None:
            return None
        transcript = parse(messages)
        steps = [g for g in transcript.groups if g.kind == "step"]
        out: list[Message] | None = None
        for group in steps[: max(0, len(steps) - self.keep_steps)]:
            calls = {call.id: call for call in messages[group.start].tool_calls}
            for i in range(group.start + 1, group.end):
                if total <= target:
                    return out
                old = messages[i]
                record = provenance(old)
                if record is not None and record.get("kind") == "placeholder":
                    continue
                if is_pinned(old):
                    continue
                call = calls.get(old.tool_call_id or "")
                tool_name = call.name if call is not None else old.name
                if tool_name in self.exclude_tools:
                    continue
                old_tokens = counter.count(old)
                if old_tokens < self.min_tokens:
                    continue
                new = self.placeholder_for(old, call)
                new_tokens = counter.count(new)
                if new_tokens >= old_tokens:
                    continue
                keep = old_tokens - (total - target)
                if keep > new_tokens + self.min_tokens:
                    # Clearing it would overshoot the target by far: cut just enough of its
                    # middle instead (head and tail kept, the cut marked with the recall id),
                    # so no more is thrown away than needed.
                    cut = cut_message(old, keep, counter, strategy=self.name)
                    if cut is not None:
                        new, new_tokens = cut, counter.count(cut)
                if out is None:
                    out = list(messages)
                out[i] = new
                total += new_tokens - old_tokens
        return out
