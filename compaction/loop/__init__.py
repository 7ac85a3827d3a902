"""A small agent turn loop with compaction before every model call and a persistent context.

    loop = TurnLoop(model, tools=[search, set_stage], window=128_000)
    result = loop.run("Draft the introduction")
    result.reply.content        # the model's answer
    loop.context                # the shared context, with what the tools set in it

One run: compact (through a [`Compactor`][compaction.trigger.Compactor], when a ``window`` is set)
-> call the model -> run the tools it asked for -> append their results -> repeat, until the
model answers without tool calls or ``max_steps`` model calls were made. Compaction happens
inside the tool loop, before every call, not once a turn: that is where tool output piles up.

**The model** is any callable from messages to a reply, sync or async: it gets a tuple of
[`Message`][compaction.messages.Message] and, when its signature takes them, ``tools=`` (OpenAI
function schemas) and the model options (``temperature=`` ...). It returns a ``Message``, a
string, an OpenAI-style dict or object (``content`` + ``tool_calls``, or a whole completion
with ``choices``). A ``usage`` on the reply (``Message.meta["usage"]``, or the object's own)
anchors the compactor's next estimate. [`compaction.loop.models.OpenAIChatModel`][] wraps an
OpenAI-compatible server.

**Tools** are plain Python callables with JSON arguments; their schema is read from the
signature (or given with [`Tool`][]). A tool that declares a ``context`` parameter receives
the shared context (a dict) and may change it. It works on a copy: when it returns, what it
changed is applied to the shared context and recorded as [`ContextChange`][] entries; when
it raises, its changes are dropped with it and the model gets the error as the tool's result
(the run goes on). With a session, the shared context is the session's global context, so
every change is on disk when the tool returns.

**Settings** come from arguments or a TOML file ([`LoopConfig.from_toml`][]): how many
history messages are used (``history_limit``, the seed's "only the last 10"), a per-message
character limit for history (``max_message_chars``, the seed's 600-character reply cut to
500), a system prompt, ``max_steps``, the compaction window and ladder, and model options.
Options given when the loop is built (``TurnLoop(..., temperature=0.8)``) are overrides: they
win over the file and are recorded in the shared context. Options given to ``run`` apply to
that run only. With no history, the prompt is sent exactly as given.

**History**: without ``history=``, a run continues the loop's own conversation (the session's
raw history, or an in-memory list) and appends its messages to it; with ``history=``, the run
stands alone and only the context persists. With a session and a compaction window, every
compaction also stores the compacted view beside the raw history (``session.set_view``), and a
run starts from that view (``session.view()``): a new process sends what the last one sent,
instead of compacting the whole raw history again and missing the provider's prompt cache.
[`chain`][] runs several loops one after another on one shared context (the seed's stream
router of context-aware agents).

**Retries**: a run that raised (the model call failed, a crash) leaves its prompt in the history
with no answer after it. Running the same prompt again continues that turn from where it stopped
(the tool results it recorded are kept and not run again) and does not record the prompt twice.
Each tool result is stored as its call finishes, so a turn stopped between two calls of one
reply (the approval hook raised, Ctrl-C, a killed process) has what ran on record; the calls it
left are answered with a note that they did not run (or may have run in part) and are never
run again by the loop: the model decides ([`answers`][compaction.loop.answers]).

**One turn at a time**: a run that extends the loop's conversation refuses to start while
another does (a tool calling its own loop, or two threads): [`ReentrantRunError`][]. A
nested run with ``history=`` stands alone and is allowed.

**Observing and steering**: every run reports itself through [`compaction.events`][]
(``turn_started``, ``model_call_started``/``_finished``/``_failed``, ``tool_call_started``/
``_finished``/``_failed``/``_denied``, ``turn_finished``), and ``approve_tool=`` is asked before
each tool call runs: it allows it, denies it (the model gets a refusal as the call's result) or
rewrites its arguments ([`compaction.loop.approval`][]). A subscriber that raises is
isolated: logged (``loop.subscriber_failed``), and the other subscribers and the turn go on.

The package, one job per module: [`config`][compaction.loop.config] (settings),
[`tools`][compaction.loop.tools] (tools and their schemas), [`context`][compaction.loop.context]
(the shared context and its change records), [`approval`][compaction.loop.approval] (the
approve-tool hook), [`replies`][compaction.loop.replies] (reading the model's reply),
[`calls`][compaction.loop.calls] (one model call, one tool call, and their events),
[`answers`][compaction.loop.answers] (a reply's calls, each result stored as it finishes),
[`history`][compaction.loop.history] (what a run starts from and records),
[`turn`][compaction.loop.turn] (the loop), [`results`][compaction.loop.results] (what a run
answers), [`chains`][compaction.loop.chains] (loops in a row).
"""

from __future__ import annotations

from .approval import ApproveTool, Deny
from .calls import ToolCallError
from .chains import Chain, ChainResult, chain
from .config import LoopConfig
from .context import MISSING, ContextChange
from .lease import TurnHeldError
from .results import LoopResult
from .tools import Tool
from .turn import ReentrantRunError, TurnLoop

__all__ = [
    "MISSING",
    "ApproveTool",
    "Chain",
    "ChainResult",
    "ContextChange",
    "Deny",
    "LoopConfig",
    "LoopResult",
    "ReentrantRunError",
    "Tool",
    "ToolCallError",
    "TurnHeldError",
    "TurnLoop",
    "chain",
]
