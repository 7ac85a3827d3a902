"""The trigger's view of the agent's conversation: what the next request is, and its size.

Kept apart from [`compaction.trigger`][] so that following the agent's list stays readable on
its own: which of the agent's messages are already mapped (and to what compacted view), when
a list is a new conversation, and the estimate of the next request (anchored on the
provider's usage when there is one). What to do about the estimate (run the ladder, back off,
keep the answer) is the [`Compactor`][compaction.trigger.Compactor]'s, which mixes
``_ConversationView`` in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ._log import log
from .messages import Message
from .pricing.usage import usage_tokens
from .tokens import TokenCounter


@attrs.define(slots=True)
class _Plan:
    """One call in progress: what would be sent, how big, and whether to compact."""

    messages: Sequence[Message]
    request: Sequence[Message]
    tokens: int  # local count of ``request`` (messages only)
    since: int  # local count of what follows the anchored request
    estimate: int
    anchored: bool
    compact: bool
    target: int  # local tokens to compact the messages down to
    labels: dict[str, Any]
    #: The copy of the agent's list the last call kept, found to be a prefix of ``messages``
    #: (and its length then): the next copy need only take what was appended.
    prefix: Sequence[Message] | None = None
    prefix_len: int = 0


#: Provider usage below this share of the local count of the same request is ignored (one
#: warning per conversation). Why 0.8: the local counter (tiktoken's o200k/cl100k) is among the
#: most compact tokenizers for English and code, so a provider that really measured the request
#: counts about as many tokens or more (Anthropic's and Llama's tokenizers count more); what
#: falls far below is not a measurement of that request (a 0, a cached-only or word count). And
#: an undercount the floor lets through is harmless: at 0.8 the default compact_at=0.7 still
#: fires by 0.875 of the window.
USAGE_FLOOR = 0.8


class AppendLog(list[Message]):
    """A list of converted messages that its owner grows at the end and shortens only with
    ``cut``, which counts every shortening in ``epoch``.

    An integration converts the framework's history into one of these, after checking the
    framework's whole list against the sources it converted (so the prefix is the same
    conversation). The trigger then knows, without walking the list again, that the same object
    at the same epoch and no shorter holds everything it mapped, unchanged: only the new tail
    is read, and no copy is kept. Anything else (another list, an epoch moved on) goes through
    the whole-prefix check as before.
    """

    __slots__ = ("epoch",)

    def __init__(self, items: Iterable[Message] = ()) -> None:
        super().__init__(items)
        self.epoch = 0

    def cut(self, n: int) -> None:
        """Keep only the first ``n`` messages (a new epoch if anything was dropped)."""
        if n < len(self):
            del self[n:]
            self.epoch += 1

    def put_tail(self, start: int, messages: Sequence[Message]) -> int:
        """Make the log from ``start`` on be ``messages``, keeping those already there that
        are equal (a conversion read again is usually unchanged, and cutting it would tell the
        trigger the conversation changed); answers how many were kept."""
        same = 0
        for a, b in zip(self[start:], messages, strict=False):
            if a != b:
                break
            same += 1
        self.cut(start + same)
        self.extend(messages[same:])
        return same


class _ConversationView:
    """The conversation-following half of [`Compactor`][compaction.trigger.Compactor] (a mixin)."""

    # Set by Compactor.__init__ (validated there); declared here for the type checker.
    counter: TokenCounter
    window: int
    threshold: int
    target: int
    tool_tokens: int
    labels: dict[str, Any]
    stats: Any
    _usage_warned: bool

    # -- state -------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the conversation: the next call counts everything afresh."""
        # The agent's messages mapped so far (all of them, by reference), represented by
        # _view (None: by themselves).
        self._src: Sequence[Message] = ()
        # Or, for an AppendLog: the list itself (not a copy), its length and epoch then.
        self._log: AppendLog | None = None
        self._log_len = 0
        self._log_epoch = 0
        self._view: tuple[Message, ...] | None = None
        self._view_tokens = 0
        # Provider-reported input tokens of an earlier request, and the local count of what
        # was appended after that request: together, the estimate of the next one.
        self._has_sent = False
        self._anchor: int | None = None
        self._since = 0
        # After an attempt that left the request at or over the mark (nothing to give, too
        # little saved, or a failure), the ladder is not asked again until the conversation
        # has grown by min_saving: asking on every call would pay for the same answer again.
        self._retry_at = 0

    @property
    def compacted(self) -> bool:
        """True when what is sent differs from the agent's list (a compaction was taken)."""
        return self._view is not None

    @property
    def view(self) -> tuple[Message, ...] | None:
        """The compacted form of what the agent's list held at the last call (None if never
        compacted)."""
        return self._view

    def observe(self, usage: Any) -> None:
        """Record the provider's reported input size for the request last returned.

        The same as passing ``usage`` to the next ``before_call``; a count far below the
        local count of that request is ignored (see ``USAGE_FLOOR``).
        """
        tokens = usage_tokens(usage)
        if self._has_sent:
            self._anchor_on(tokens)

    def _anchor_on(self, reported: int) -> None:
        # Usage is a hint: it anchors the estimate only when it is plausible for the request
        # it describes. A 0 (the Agents SDK's default usage, local servers, fake models) or a
        # reporter that counts words would otherwise hold the estimate far under the truth
        # and send over-window requests, silently.
        sent = self._view_tokens + self.tool_tokens
        if reported < USAGE_FLOOR * sent:
            self.stats.usage_ignored += 1
            if not self._usage_warned:
                self._usage_warned = True
                log.warning(
                    "trigger.usage_implausible",
                    reported=reported,
                    local=sent,
                    floor=USAGE_FLOOR,
                    labels=self.labels,
                )
            return
        self._anchor, self._since = reported, 0

    def _reported(self, usage: Any) -> int | None:
        # A usage without a readable input count (a server that sends nulls, or only totals)
        # is no reason to end the turn: the estimate is then counted locally.
        try:
            return usage_tokens(usage)
        except (TypeError, ValueError) as exc:
            log.warning("trigger.usage_unreadable", error=exc, labels=self.labels)
            return None

    @staticmethod
    def _extends(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
        # The whole prefix, not its ends: two conversations can share their first and N-th
        # messages (one system prompt, one greeting, "continue"), and taking one for the other
        # would send one user's history in another's request. A list or tuple comparison
        # runs in C and compares by identity first, so for an agent that keeps its objects
        # this is a pointer walk (a slice of the agent's list would touch every message's
        # refcount: for a list, our copy takes the appended tail for the comparison instead).
        n = len(prefix)
        if n == 0:
            return True
        if len(messages) < n:
            return False
        if type(prefix) is list and type(messages) is list and len(messages) > n:
            # Our own copy, grown for a moment by what was appended, against the agent's list
            # as it is: the same comparison, without slicing the agent's list (a slice touches
            # every message's refcount: at tens of thousands of messages that walk, once a
            # call, costs more than the call's own work).
            prefix.extend(messages[n:])
            try:
                return prefix == messages
            finally:
                del prefix[n:]
        head = messages if len(messages) == n else messages[:n]
        if type(head) is not type(prefix):
            head = list(head) if isinstance(prefix, list) else tuple(head)
        return head == prefix

    def _appended(self, messages: Sequence[Message]) -> bool:
        # The integration's own log, only grown since: its owner checked the framework's whole
        # list before appending, so the mapped prefix needs no second walk.
        log_ = self._log
        return (
            messages is log_
            and log_ is not None
            and log_.epoch == self._log_epoch
            and len(log_) >= self._log_len
        )

    def _mapped(self) -> Sequence[Message] | None:
        # What the last call mapped; None when it is gone (the log it lived in was cut).
        log_ = self._log
        if log_ is None:
            return self._src
        if log_.epoch != self._log_epoch or len(log_) < self._log_len:
            return None
        return log_ if len(log_) == self._log_len else log_[: self._log_len]

    def _keep_src(self, plan: _Plan, messages: Sequence[Message]) -> None:
        # What the next call compares with: the tuple itself, or a copy of the list.
        src = self._src
        if type(src) is list and plan.prefix is src and len(src) == plan.prefix_len:
            # Our copy was found equal to the head of ``messages`` when the call was planned:
            # only what the agent appended since is copied (a session's history, not again).
            src.extend(messages[len(src) :])
        else:
            self._src = messages if isinstance(messages, tuple) else list(messages)

    def _mapped_len(self) -> int:
        return self._log_len if self._log is not None else len(self._src)

    def _plan(self, messages: Sequence[Message], usage: Any) -> _Plan:
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError(
                f"messages must be a sequence of Message, got {type(messages).__name__}"
            )
        reported = None if usage is None else self._reported(usage)
        view = self._view
        prefix = None
        if self._appended(messages):
            start = self._log_len
        elif (mapped := self._mapped()) is not None and self._extends(messages, mapped):
            start = len(mapped)
            prefix = mapped
        elif view is not None and self._extends(messages, view):
            # The agent adopted the request we returned as its own list: map it to itself.
            start = len(view)
            self._view = view = None
        else:
            log.debug("trigger.restart", messages=len(messages), mapped=self._mapped_len())
            # A usage reported now describes a request we no longer map: it cannot anchor.
            self.reset()
            view, start, reported = None, 0, None
        if reported is not None and self._has_sent:
            self._anchor_on(reported)
        new = messages[start:]
        for i, m in enumerate(new):
            if not isinstance(m, Message):
                raise TypeError(
                    f"messages[{start + i}] must be a compaction.Message, got "
                    f"{type(m).__name__}; convert provider dicts with compaction.adapters first"
                )
        new_tokens = self.counter.count_messages(new)
        tokens = self._view_tokens + new_tokens
        request: Sequence[Message] = messages if view is None else view + tuple(new)
        since = self._since + new_tokens
        # With an anchor: what the provider measured for an earlier request (tool schemas
        # included), plus a local count of only what came after it.
        anchored = self._anchor is not None
        estimate = self._anchor + since if self._anchor is not None else tokens + self.tool_tokens
        target = self.target
        local = tokens + self.tool_tokens
        if anchored and estimate > local > 0:
            # The provider counts this conversation bigger than we do (another tokenizer,
            # images, hidden prompt parts). The pipeline measures with the local counter, so
            # aim lower by the same ratio, or it would stop short of what the provider sees.
            scaled = math.floor((self.target + self.tool_tokens) * local / estimate)
            target = max(min(target, scaled - self.tool_tokens), 1)
        labels = {**self.labels, "context_size": estimate, "window": self.window}
        return _Plan(
            messages,
            request,
            tokens,
            since,
            estimate,
            anchored,
            # Over the window, a request cannot be sent at all: ask even while backing off.
            estimate >= self.threshold and (estimate >= self._retry_at or estimate > self.window),
            target,
            labels,
            prefix,
            start,
        )
