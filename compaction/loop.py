"""A small agent turn loop with compaction before every model call and a persistent context.

    loop = TurnLoop(model, tools=[search, set_stage], window=128_000)
    result = loop.run("Draft the introduction")
    result.reply.content        # the model's answer
    loop.context                # the shared context, with what the tools set in it

One run: compact (through a :class:`~compaction.trigger.Compactor`, when a ``window`` is set)
-> call the model -> run the tools it asked for -> append their results -> repeat, until the
model answers without tool calls or ``max_steps`` model calls were made. Compaction happens
inside the tool loop, before every call, not once a turn: that is where tool output piles up.

**The model** is any callable from messages to a reply, sync or async: it gets a tuple of
:class:`~compaction.messages.Message` and, when its signature takes them, ``tools=`` (OpenAI
function schemas) and the model options (``temperature=`` ...). It returns a ``Message``, a
string, an OpenAI-style dict or object (``content`` + ``tool_calls``, or a whole completion
with ``choices``). A ``usage`` on the reply (``Message.meta["usage"]``, or the object's own)
anchors the compactor's next estimate. :class:`compaction.models.OpenAIChatModel` wraps an
OpenAI-compatible server.

**Tools** are plain Python callables with JSON arguments; their schema is read from the
signature (or given with :class:`Tool`). A tool that declares a ``context`` parameter receives
the shared context (a dict) and may change it. It works on a copy: when it returns, what it
changed is applied to the shared context and recorded as :class:`ContextChange` entries; when
it raises, its changes are dropped with it and the model gets the error as the tool's result
(the run goes on). With a session, the shared context is the session's global context, so
every change is on disk when the tool returns.

**Settings** come from arguments or a TOML file (:meth:`LoopConfig.from_toml`): how many
history messages are used (``history_limit``, the seed's "only the last 10"), a per-message
character limit for history (``max_message_chars``, the seed's 600-character reply cut to
500), a system prompt, ``max_steps``, the compaction window and ladder, and model options.
Options given when the loop is built (``TurnLoop(..., temperature=0.8)``) are overrides: they
win over the file and are recorded in the shared context. Options given to :meth:`run` apply to
that run only. With no history, the prompt is sent exactly as given.

**History**: without ``history=``, a run continues the loop's own conversation (the session's
raw history, or an in-memory list) and appends its messages to it; with ``history=``, the run
stands alone and only the context persists. With a session and a compaction window, every
compaction also stores the compacted view beside the raw history (``session.set_view``), and a
run starts from that view (``session.view()``): a new process sends what the last one sent,
instead of compacting the whole raw history again and missing the provider's prompt cache.
:func:`chain` runs several loops one after another on one shared context (the seed's stream
router of context-aware agents).
"""

from __future__ import annotations

import copy
import inspect
import json
import secrets
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from ._log import log
from .messages import Message, ToolCall, assistant, tool, user
from .registry import ConfigError, UnknownStrategyError, read_toml
from .tokens import TokenCounter
from .transcript import parse
from .trigger import Compactor
from .validate import validate

__all__ = [
    "MISSING",
    "Chain",
    "ChainResult",
    "ContextChange",
    "LoopConfig",
    "LoopResult",
    "Tool",
    "TurnLoop",
    "chain",
]


class _Missing:
    """The value of a context key that did not exist (before) or no longer exists (after)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


# -- configuration -------------------------------------------------------------------------------


def _positive_int_or_none(name: str) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")

    return check


def _check_max_steps(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"max_steps must be a positive int, got {value!r}")


def _check_share(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{attribute.name} must be a number in (0, 1], got {value!r}")


_LOOP_KEYS: Final = ("max_steps", "history_limit", "max_message_chars", "system", "name")
_COMPACTION_KEYS: Final = ("window", "compact_at", "compact_to", "use", "run", "strict")


@attrs.frozen(slots=True, kw_only=True)
class LoopConfig:
    """The loop's settings (see the module docstring); every field is optional.

    - ``max_steps``: model calls per run at most (default 10).
    - ``history_limit``: the newest history messages used per run (None: all). Tool pairs are
      never split, so a limit that would cut a call from its results keeps fewer.
    - ``max_message_chars``: history messages (not system) longer than this are cut to it,
      marker included, with :class:`~compaction.strategies.truncate.Truncate`.
    - ``system``: a system prompt put first in every request (never stored in the history).
    - ``name``: the agent's name, recorded on the context changes it makes.
    - ``model_options``: passed to the model on every call (``temperature``, ``model`` ...).
    - ``window``, ``compact_at``, ``compact_to``, ``ladder``: compaction before every call
      (none without a window); ``ladder`` is a :func:`~compaction.registry.ladder_from_config`
      table (default: ``tool_results`` then ``sliding_window``).
    """

    max_steps: int = attrs.field(default=10, validator=_check_max_steps)
    history_limit: int | None = attrs.field(
        default=None, validator=_positive_int_or_none("history_limit")
    )
    max_message_chars: int | None = attrs.field(
        default=None, validator=_positive_int_or_none("max_message_chars")
    )
    system: str | None = None
    name: str = "agent"
    model_options: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    window: int | None = attrs.field(default=None, validator=_positive_int_or_none("window"))
    compact_at: float = attrs.field(default=0.7, validator=_check_share)
    compact_to: float = attrs.field(default=0.4, validator=_check_share)
    ladder: Mapping[str, Any] | None = None

    def evolve(self, **changes: Any) -> LoopConfig:
        """A copy with ``changes`` (``None`` values are ignored: "not given")."""
        return attrs.evolve(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "config") -> LoopConfig:
        """Settings from a table shaped like the TOML file::

            [loop]        max_steps, history_limit, max_message_chars, system, name
            [model]       any model option (temperature = 0.2, model = "...")
            [compaction]  window, compact_at, compact_to, use = [...], run = "...", strict

        Unknown tables and keys are errors naming them (a typo must not be ignored).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a table, got {type(data).__name__}")
        unknown = sorted(set(data) - {"loop", "model", "compaction"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown table(s) {unknown}; expected 'loop', 'model', 'compaction'"
            )
        tables = {}
        for table, allowed in (("loop", _LOOP_KEYS), ("model", None), ("compaction", None)):
            value = data.get(table, {})
            if not isinstance(value, Mapping):
                raise ConfigError(f"{source}: [{table}] must be a table, got {value!r}")
            if allowed is not None:
                bad = sorted(set(value) - set(allowed))
                if bad:
                    raise ConfigError(
                        f"{source}: unknown key(s) {bad} in [{table}]; expected {list(allowed)}"
                    )
            tables[table] = dict(value)
        comp = tables["compaction"]
        bad = sorted(set(comp) - set(_COMPACTION_KEYS))
        if bad:
            raise ConfigError(
                f"{source}: unknown key(s) {bad} in [compaction]; expected {list(_COMPACTION_KEYS)}"
            )
        ladder = {k: comp.pop(k) for k in ("use", "run", "strict") if k in comp}
        try:
            return cls(
                **tables["loop"],
                model_options=tables["model"],
                **comp,
                ladder=ladder or None,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def from_toml(cls, path: str | Path) -> LoopConfig:
        """Settings from a TOML file (the shape :meth:`from_dict` documents)."""
        data = read_toml(path)
        return cls.from_dict(data, source=str(path))


# -- tools ---------------------------------------------------------------------------------------

_JSON_TYPES: Final[Mapping[Any, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation) or annotation
    kind = _JSON_TYPES.get(origin)
    return {"type": kind} if kind else {}


@attrs.frozen(slots=True)
class Tool:
    """A Python callable the model may call. Build one with :meth:`from_function`.

    ``parameters`` is the JSON schema of its arguments; ``takes_context`` says whether it
    gets the shared context as ``context=``.
    """

    name: str
    function: Callable[..., Any]
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}
    )
    takes_context: bool = False

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Tool:
        """A tool from a function: name, first docstring paragraph and the argument schema are
        read from it unless given (``context`` is not an argument the model sees)."""
        if not callable(function):
            raise TypeError(f"a tool must be callable, got {type(function).__name__}")
        signature = inspect.signature(function)
        takes_context = "context" in signature.parameters
        if parameters is None:
            try:
                hints = typing.get_type_hints(function)
            except Exception:  # unresolvable annotations: describe the arguments untyped
                hints = {}
            properties: dict[str, Any] = {}
            required: list[str] = []
            for pname, param in signature.parameters.items():
                if pname == "context" or param.kind in (
                    param.VAR_POSITIONAL,
                    param.VAR_KEYWORD,
                    param.POSITIONAL_ONLY,
                ):
                    continue
                properties[pname] = _json_type(hints.get(pname, param.annotation))
                if param.default is param.empty:
                    required.append(pname)
            parameters = {"type": "object", "properties": properties}
            if required:
                parameters["required"] = required
        tool_name = name or getattr(function, "__name__", None)
        if not tool_name or tool_name == "<lambda>":
            raise ValueError("a tool needs a name: pass name= for a lambda or a callable object")
        doc = description
        if doc is None:
            doc = (inspect.getdoc(function) or "").split("\n\n")[0].strip()
        return cls(tool_name, function, doc, dict(parameters), takes_context)

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema sent to the model."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


def _tools(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    for item in tools:
        made = item if isinstance(item, Tool) else Tool.from_function(item)
        if made.name in table:
            raise ValueError(f"two tools are named {made.name!r}; tool names must be unique")
        table[made.name] = made
    return table


@attrs.frozen(slots=True)
class ContextChange:
    """One change to the shared context: ``key`` went from ``old`` to ``new``
    (:data:`MISSING` for a key created or removed), made by ``agent`` through ``source``
    (a tool's name, ``"override"`` for a setting given to the loop, ``"metadata"`` for what a
    chained message carried in)."""

    key: str
    old: Any
    new: Any
    agent: str
    source: str


def _diff(
    before: Mapping[str, Any], after: Mapping[str, Any], agent: str, source: str
) -> list[ContextChange]:
    changes = []
    for key in after:
        old = before.get(key, MISSING)
        if old is MISSING or old != after[key]:
            changes.append(ContextChange(key, old, copy.deepcopy(after[key]), agent, source))
    for key in before:
        if key not in after:
            changes.append(ContextChange(key, copy.deepcopy(before[key]), MISSING, agent, source))
    return changes


def _apply(context: MutableMapping[str, Any], changes: Iterable[ContextChange]) -> None:
    for change in changes:
        if change.new is MISSING:
            context.pop(change.key, None)
        else:
            context[change.key] = copy.deepcopy(change.new)


def _apply_all(context: MutableMapping[str, Any], changes: Sequence[ContextChange]) -> None:
    """Apply ``changes`` all or nothing: every new value in one ``update`` (one atomic write,
    checked first, for a session's context), then the removals, which cannot fail."""
    values = {c.key: copy.deepcopy(c.new) for c in changes if c.new is not MISSING}
    if values:
        context.update(values)
    for change in changes:
        if change.new is MISSING:
            context.pop(change.key, None)


# -- replies -------------------------------------------------------------------------------------


def _get(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _reply_message(reply: Any, step: int) -> tuple[Message, Any]:
    """The model's reply as an assistant :class:`Message`, and the usage it reported."""
    if isinstance(reply, Message):
        if reply.role != "assistant":
            raise TypeError(f"the model must reply with an assistant message, got {reply.role!r}")
        return _unique_call_ids(reply), reply.meta.get("usage")
    if isinstance(reply, str):
        return assistant(reply), None
    if reply is None:
        raise TypeError("the model returned None instead of a reply")
    usage = _get(reply, "usage")
    choices = _get(reply, "choices")
    if choices:
        reply = _get(choices[0], "message")
    content = _get(reply, "content")
    raw_calls = _get(reply, "tool_calls") or ()
    if content is not None and not isinstance(content, str):
        raise TypeError(f"the reply's content must be text, got {type(content).__name__}")
    calls = []
    for n, raw in enumerate(raw_calls):
        function = _get(raw, "function") or raw
        name = _get(function, "name")
        arguments = _get(function, "arguments")
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool call {n} of the reply has no name")
        calls.append(
            ToolCall(
                _get(raw, "id") or _new_call_id(),
                name,
                arguments if arguments is not None else "{}",
            )
        )
    return _unique_call_ids(assistant(content or "", calls)), usage


def _new_call_id() -> str:
    # Random, not numbered per run: ids must not repeat anywhere in the conversation
    # (Anthropic refuses a request whose tool_use ids repeat), and runs continue a history.
    return f"call_{secrets.token_hex(8)}"


def _unique_call_ids(message: Message) -> Message:
    """``message`` with a repeated tool call id replaced: results are matched to calls by id,
    so two calls sharing one would make a conversation every provider refuses."""
    seen: set[str] = set()
    calls = []
    changed = False
    for call in message.tool_calls:
        if call.id in seen:
            call, changed = ToolCall(_new_call_id(), call.name, call.arguments), True
        seen.add(call.id)
        calls.append(call)
    return message.replace(tool_calls=tuple(calls)) if changed else message


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


# -- results -------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class LoopResult:
    """One run.

    ``reply``: the last assistant message; ``messages``: what the run added to the
    conversation (the prompt, then every reply and tool result); ``requests``: what each
    model call was sent (after compaction); ``stopped``: ``"answer"`` (the model answered
    without tool calls) or ``"max_steps"``; ``context_changes``: every change made to the
    shared context during the run, in order; ``context``: a copy of the context at the end.
    """

    reply: Message
    messages: tuple[Message, ...]
    requests: tuple[tuple[Message, ...], ...]
    stopped: Literal["answer", "max_steps"]
    context_changes: tuple[ContextChange, ...]
    context: dict[str, Any]

    @property
    def steps(self) -> int:
        """Model calls made."""
        return len(self.requests)


# -- the loop ------------------------------------------------------------------------------------


def _signature_options(model: Callable[..., Any]) -> tuple[bool, frozenset[str] | None]:
    """Whether ``model`` takes ``tools=``, and which keyword options (None: any)."""
    try:
        signature = inspect.signature(model)
    except (TypeError, ValueError):  # some builtins and C callables: assume messages only
        return False, frozenset()
    params = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return True, None
    names = frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    return "tools" in names, names - {"tools"}


def _is_async(function: Callable[..., Any]) -> bool:
    # A callable object (such as an async client wrapper) is async through its __call__.
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return inspect.iscoroutinefunction(function) or (
        call is not None and inspect.iscoroutinefunction(call)
    )


def _drive(coroutine: Awaitable[Any]) -> Any:
    """Run a coroutine that never suspends, without an event loop.

    The loop is written once, as a coroutine; with a sync model and sync tools nothing in it
    ever waits, so the sync :meth:`TurnLoop.run` can drive it to the end in one step and works
    inside a running event loop too (where ``asyncio.run`` would refuse).
    """
    coro = typing.cast(Any, coroutine)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(
        "the model or a tool waited on I/O in the sync run(); use `await loop.arun(...)`"
    )


class TurnLoop:
    """An agent turn loop: compaction before every model call, tools, a persistent context.

    - ``model``: the model callable (see the module docstring); ``tools``: functions or
      :class:`Tool` objects.
    - ``config``: a :class:`LoopConfig`, or the path of a TOML file; keyword settings
      (``max_steps``, ``history_limit``, ``max_message_chars``, ``system``, ``name``,
      ``window``, ``compact_at``, ``compact_to``) override it.
    - ``compactor``: a ready :class:`~compaction.trigger.Compactor` (else one is built when a
      ``window`` is set, with the tools' schemas accounted for); ``counter`` its counter.
    - ``session``: a persistent session (anything with ``add(*messages)``, ``global_context`` and
      ``save``; ``messages`` for the history): the history is its raw history and the context
      its global context. Otherwise ``context`` (a dict you keep; default a new one) and an
      in-memory history.
    - ``**options``: model option overrides (``temperature=0.8``), recorded in the context.
    """

    def __init__(
        self,
        model: Callable[..., Any],
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        config: LoopConfig | str | Path | None = None,
        compactor: Compactor | None = None,
        counter: TokenCounter | None = None,
        session: Any = None,
        context: MutableMapping[str, Any] | None = None,
        max_steps: int | None = None,
        history_limit: int | None = None,
        max_message_chars: int | None = None,
        system: str | None = None,
        name: str | None = None,
        window: int | None = None,
        compact_at: float | None = None,
        compact_to: float | None = None,
        **options: Any,
    ) -> None:
        if not callable(model):
            raise TypeError(f"model must be callable, got {type(model).__name__}")
        if isinstance(config, str | Path):
            config = LoopConfig.from_toml(config)
        config = (config or LoopConfig()).evolve(
            max_steps=max_steps,
            history_limit=history_limit,
            max_message_chars=max_message_chars,
            system=system,
            name=name,
            window=window,
            compact_at=compact_at,
            compact_to=compact_to,
        )
        if session is not None and context is not None:
            raise ValueError(
                "pass either session= (its global context is used) or context=, not both"
            )
        if session is not None:
            missing = [a for a in ("add", "global_context") if not hasattr(session, a)]
            if missing:
                raise TypeError(f"session must have {missing} (a compaction.sessions.Session)")
        self.model = model
        self.config = config
        self.tools = _tools(tools)
        self.session = session
        self.context: MutableMapping[str, Any]
        if session is not None:
            self.context = session.global_context
        else:
            self.context = {} if context is None else context
        self._history: list[Message] = []
        self._takes_tools, self._option_names = _signature_options(model)
        self._model_async = _is_async(model)
        self._truncate = None
        if config.max_message_chars is not None:
            from .strategies.truncate import Truncate

            self._truncate = Truncate(
                max_chars=config.max_message_chars, roles=("user", "assistant", "tool")
            )
        schemas = [t.schema for t in self.tools.values()]
        if compactor is None and config.window is not None:
            try:
                pipeline = self._pipeline(config)
            except (ConfigError, UnknownStrategyError) as exc:
                raise ConfigError(f"[compaction]: {exc}") from None
            compactor = Compactor(
                pipeline,
                config.window,
                config.compact_at,
                config.compact_to,
                counter=counter,
                tools=schemas,
                labels={"agent": config.name},
            )
        self.compactor = compactor
        self.options: dict[str, Any] = {**config.model_options, **options}
        self._check_options(self.options)
        # Overrides given when building the loop are the run's settings: recorded in the
        # shared (and, with a session, persistent) context where other agents can see them.
        self.override_changes = tuple(self._merge(options, source="override"))

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        model: Callable[..., Any],
        tools: Iterable[Tool | Callable[..., Any]] = (),
        **kwargs: Any,
    ) -> TurnLoop:
        """A loop with its settings from the TOML file at ``path`` (keywords override it)."""
        return cls(model, tools, config=LoopConfig.from_toml(path), **kwargs)

    @staticmethod
    def _pipeline(config: LoopConfig) -> Any:
        from .registry import ladder_from_config

        # The compactor hands its counter to every run, so the pipeline needs none of its own.
        return ladder_from_config(
            dict(config.ladder or {"use": ["tool_results", "sliding_window"]})
        )

    def __repr__(self) -> str:
        return f"<TurnLoop {self.config.name!r} tools={list(self.tools)}>"

    # -- context -------------------------------------------------------------------------------

    def _merge(
        self, values: Mapping[str, Any], *, source: str, context: Any = None
    ) -> list[ContextChange]:
        target = self.context if context is None else context
        before = {k: target[k] for k in values if k in target}
        changes = _diff(before, {**before, **values}, self.config.name, source)
        _apply(target, changes)
        return changes

    def _check_options(self, options: Mapping[str, Any]) -> None:
        if self._option_names is None:
            return
        unknown = sorted(set(options) - self._option_names)
        if unknown:
            raise TypeError(
                f"the model callable takes no option(s) {unknown}; give it a **options "
                "parameter or named parameters for them"
            )

    # -- history ---------------------------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The loop's conversation so far (the session's raw history with a session)."""
        if self.session is not None:
            return tuple(getattr(self.session, "messages", ()))
        return tuple(self._history)

    def _start(self) -> tuple[Message, ...]:
        """What a continuing run starts from: a session's stored view (plus what came after
        it) when it keeps one, else the history itself."""
        view = getattr(self.session, "view", None)
        if callable(view):
            return tuple(view())
        return self.history

    def _store_view(self, request: Sequence[Message]) -> None:
        """Keep a compacted request as the session's view, so the next run starts from it."""
        set_view = getattr(self.session, "set_view", None)
        if not callable(set_view):
            return
        view = list(request)
        if (
            self.config.system is not None
            and view
            and view[0] == Message("system", self.config.system)
        ):
            view = view[1:]  # the system prompt comes from the config, added to every run
        try:
            set_view(view)
        except (TypeError, ValueError) as exc:
            # The raw history is intact either way; a view that cannot be kept only costs the
            # next run a compaction of its own.
            log.warning("loop.view_not_stored", error=str(exc), agent=self.config.name)

    def _frame(self, history: Sequence[Message]) -> list[Message]:
        """The request before the prompt: system prompt, then the history as configured."""
        msgs = tuple(history)
        for i, m in enumerate(msgs):
            if not isinstance(m, Message):
                raise TypeError(
                    f"history[{i}] must be a compaction.Message, got {type(m).__name__}"
                )
        head: list[Message] = []
        if self.config.system is not None:
            head.append(Message("system", self.config.system))
        transcript = parse(msgs)
        kept = list(msgs[: transcript.system_end])
        rest = transcript.groups
        limit = self.config.history_limit
        if limit is not None:
            # Whole groups from the newest back, so a call is never sent without its results.
            count = 0
            start = len(rest)
            while start > 0 and count + len(rest[start - 1]) <= limit:
                start -= 1
                count += len(rest[start])
            rest = rest[start:]
        body = [m for g in rest for m in msgs[g.start : g.end]]
        if self._truncate is not None:
            body = [self._truncate.truncate_message(m) for m in body]
        return [*head, *kept, *body]

    def _record(self, *batch: Message, store: bool) -> tuple[Message, ...]:
        """Append ``batch`` to the history in one write (with a session: one ``add``)."""
        if not store:
            return batch
        if self.session is not None:
            stored = self.session.add(*batch)
            if (
                isinstance(stored, tuple)
                and len(stored) == len(batch)
                and all(isinstance(m, Message) for m in stored)
            ):
                return stored
            return batch
        self._history.extend(batch)
        return batch

    # -- running ---------------------------------------------------------------------------------

    async def _call_model(
        self, request: tuple[Message, ...], options: Mapping[str, Any], sync: bool
    ) -> Any:
        kwargs = dict(options)
        if self._takes_tools:
            kwargs["tools"] = [t.schema for t in self.tools.values()] or None
        reply = self.model(request, **kwargs)
        if inspect.isawaitable(reply):
            if sync:
                close = getattr(reply, "close", None)
                if close is not None:
                    close()
                raise TypeError("the model is async: use `await loop.arun(...)`")
            reply = await reply
        return reply

    async def _call_tool(
        self,
        call: ToolCall,
        context: MutableMapping[str, Any],
        changes: list[ContextChange],
        sync: bool,
    ) -> str:
        found = self.tools.get(call.name)
        if found is None:
            return f"error: no tool named {call.name!r}; available: {sorted(self.tools)}"
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: the arguments of {call.name!r} are not valid JSON: {exc}"
        if not isinstance(arguments, dict):
            return f"error: the arguments of {call.name!r} must be a JSON object"
        if "context" in arguments:
            return "error: 'context' is not an argument the model may set"
        work: dict[str, Any] | None = None
        if found.takes_context:
            # A copy: a tool that raises halfway leaves the shared context as it was.
            work = copy.deepcopy(dict(context))
            arguments["context"] = work
        try:
            value = found.function(**arguments)
            if inspect.isawaitable(value):
                if sync:
                    close = getattr(value, "close", None)
                    if close is not None:
                        close()
                    raise TypeError(f"tool {call.name!r} is async: use `await loop.arun(...)`")
                value = await value
        except Exception as exc:
            log.warning("loop.tool_failed", tool=call.name, error=repr(exc))
            return f"error: {call.name} raised {type(exc).__name__}: {exc}"
        if work is not None:
            before = {k: context[k] for k in context}
            made = _diff(before, work, self.config.name, call.name)
            try:
                _apply_all(context, made)
            except (TypeError, ValueError) as exc:
                # A value the context cannot hold (a session's context keeps JSON only): the
                # tool's changes are dropped, as when it raises, and the model is told.
                log.warning("loop.context_refused", tool=call.name, error=repr(exc))
                return f"error: {call.name} changed the context in a way it cannot keep: {exc}"
            changes.extend(made)
        return _result_text(value)

    async def _run(
        self,
        prompt: str | Message,
        history: Sequence[Message] | None,
        context: MutableMapping[str, Any] | None,
        options: Mapping[str, Any],
        sync: bool,
    ) -> LoopResult:
        if sync and self._model_async:
            raise TypeError("the model is async: use `await loop.arun(...)`")
        if isinstance(prompt, str):
            prompt_message = user(prompt)
        elif isinstance(prompt, Message):
            if prompt.role != "user":
                raise ValueError(f"the prompt must be a user message, got {prompt.role!r}")
            prompt_message = prompt
        else:
            raise TypeError(f"prompt must be a str or a Message, got {type(prompt).__name__}")
        run_options = {**self.options, **options}
        self._check_options(run_options)
        shared = self.context if context is None else context
        store = history is None
        messages = self._frame(self._start() if history is None else history)
        messages.append(prompt_message)
        validate(messages)
        (messages[-1],) = self._record(prompt_message, store=store)
        added = [messages[-1]]
        requests: list[tuple[Message, ...]] = []
        changes: list[ContextChange] = []
        usage: Any = None
        stopped: Literal["answer", "max_steps"] = "max_steps"
        reply: Message | None = None
        compactor = self.compactor
        for step in range(self.config.max_steps):
            if compactor is None:
                request = tuple(messages)
            else:
                compactions = compactor.stats.compactions
                if sync:
                    request = tuple(compactor.before_call(messages, usage))
                else:
                    request = tuple(await compactor.abefore_call(messages, usage))
                if store and self.session is not None and compactor.stats.compactions > compactions:
                    self._store_view(request)
            requests.append(request)
            raw = await self._call_model(request, run_options, sync)
            reply, usage = _reply_message(raw, step)
            results = [
                tool(call.id, await self._call_tool(call, shared, changes, sync), name=call.name)
                for call in reply.tool_calls
            ]
            # A reply is stored together with the results of its calls, in one write: a run
            # interrupted while a tool works (Ctrl-C, a crash) leaves no unanswered call in
            # the history, which would make every later request invalid.
            stored = self._record(reply, *results, store=store)
            reply = stored[0]
            messages.extend(stored)
            added.extend(stored)
            if not reply.tool_calls:
                stopped = "answer"
                break
        assert reply is not None  # max_steps >= 1
        save = getattr(self.session, "save", None)
        if store and save is not None:
            save()
        log.debug(
            "loop.run",
            agent=self.config.name,
            steps=len(requests),
            stopped=stopped,
            changes=len(changes),
        )
        return LoopResult(
            reply=reply,
            messages=tuple(added),
            requests=tuple(requests),
            stopped=stopped,
            context_changes=tuple(changes),
            context=copy.deepcopy(dict(shared)),
        )

    def run(
        self,
        prompt: str | Message,
        *,
        history: Sequence[Message] | None = None,
        context: MutableMapping[str, Any] | None = None,
        **options: Any,
    ) -> LoopResult:
        """Run one turn: the model is called until it answers without tool calls.

        ``history``: the conversation before the prompt, for a run that stands alone (default:
        the loop's own conversation, which the run then extends). ``context``: the shared
        context for this run (default: the loop's). ``**options``: model options for this run.
        """
        return _drive(self._run(prompt, history, context, options, sync=True))

    async def arun(
        self,
        prompt: str | Message,
        *,
        history: Sequence[Message] | None = None,
        context: MutableMapping[str, Any] | None = None,
        **options: Any,
    ) -> LoopResult:
        """Async twin of :meth:`run`: awaits an async model, async tools and summarisers."""
        return await self._run(prompt, history, context, options, sync=False)


# -- chaining ------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class ChainResult:
    """A message's way through a chain: each loop's result, every context change in order,
    and the final context."""

    results: tuple[LoopResult, ...]
    context_changes: tuple[ContextChange, ...]
    context: dict[str, Any]

    @property
    def reply(self) -> Message:
        """The last loop's answer."""
        return self.results[-1].reply


class Chain:
    """Loops run one after another on one shared context (the seed's stream router).

    Each loop's answer is the next loop's prompt; every loop reads and changes the same
    context, so what one agent set the next one sees. ``context`` is that mapping (a dict, or
    a session's global context to persist it); by default a new dict.
    """

    def __init__(
        self, loops: Sequence[TurnLoop], *, context: MutableMapping[str, Any] | None = None
    ) -> None:
        loops = tuple(loops)
        if not loops:
            raise ValueError("a chain needs at least one loop")
        for i, loop in enumerate(loops):
            if not isinstance(loop, TurnLoop):
                raise TypeError(f"loops[{i}] must be a TurnLoop, got {type(loop).__name__}")
        self.loops = loops
        self.context: MutableMapping[str, Any] = {} if context is None else context

    def _start(self, metadata: Mapping[str, Any] | None) -> list[ContextChange]:
        changes: list[ContextChange] = []
        if metadata:
            before = {k: self.context[k] for k in metadata if k in self.context}
            made = _diff(before, {**before, **metadata}, "chain", "metadata")
            _apply(self.context, made)
            changes += made
        return changes

    def run(
        self, message: str | Message, *, metadata: Mapping[str, Any] | None = None
    ) -> ChainResult:
        """Send ``message`` through every loop; ``metadata`` is put in the context first."""
        changes = self._start(metadata)
        results: list[LoopResult] = []
        prompt: str | Message = message
        for loop in self.loops:
            result = loop.run(prompt, history=(), context=self.context)
            results.append(result)
            changes.extend(result.context_changes)
            prompt = result.reply.content
        return ChainResult(tuple(results), tuple(changes), copy.deepcopy(dict(self.context)))

    async def arun(
        self, message: str | Message, *, metadata: Mapping[str, Any] | None = None
    ) -> ChainResult:
        """Async twin of :meth:`run`."""
        changes = self._start(metadata)
        results: list[LoopResult] = []
        prompt: str | Message = message
        for loop in self.loops:
            result = await loop.arun(prompt, history=(), context=self.context)
            results.append(result)
            changes.extend(result.context_changes)
            prompt = result.reply.content
        return ChainResult(tuple(results), tuple(changes), copy.deepcopy(dict(self.context)))


def chain(*loops: TurnLoop, context: MutableMapping[str, Any] | None = None) -> Chain:
    """Loops that pass a message along and share one context: ``chain(a, b, c).run(msg)``."""
    return Chain(loops, context=context)
