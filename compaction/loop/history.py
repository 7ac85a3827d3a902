"""The loop's conversation: where a run starts from, what it sends, and what it records.

With a session the conversation is the session's raw history (and the compacted view it
keeps); without one, an in-memory list. Only the session's public methods are used
(``messages``, ``add``, ``view``, ``set_view``), so any object with them serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._log import log
from ..memory.transcript import parse
from ..messages import Message, ToolCall, tool
from .config import LoopConfig

if TYPE_CHECKING:  # loaded only by a loop that truncates (``max_message_chars``)
    from ..strategies.truncate import Truncate

__all__ = ["History", "frame"]


class History:
    """A loop's own conversation: a session's, or a list in memory."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._memory: list[Message] = []

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far (the session's raw history with a session)."""
        if self.session is not None:
            return tuple(getattr(self.session, "messages", ()))
        return tuple(self._memory)

    def start(self) -> tuple[Message, ...]:
        """What a continuing run starts from: a session's stored view (plus what came after
        it) when it keeps one, else the history itself."""
        view = getattr(self.session, "view", None)
        if callable(view):
            return tuple(view())
        return self.messages

    def unfinished(self, prompt: Message) -> Message | None:
        """The stored prompt when ``prompt`` retries the last turn, which never finished.

        A turn is unfinished when nothing after its prompt is an answer: only replies that
        called tools and their results (a model call that raised, a crash, ``max_steps``).
        Sending the same prompt again continues that turn from where it stopped, instead of
        recording the prompt a second time (the model would see the question twice).
        """
        for message in reversed(self.messages):
            if message.role == "tool" or (message.role == "assistant" and message.tool_calls):
                continue
            same = (
                message.role == "user"
                and message.content == prompt.content
                and message.name == prompt.name
            )
            return message if same else None
        return None

    def unanswered(self) -> tuple[ToolCall, ...]:
        """The calls of the last reply that have no result yet.

        Results are stored one by one as their calls finish, so a run that stopped between two
        calls (a process killed, a write that failed) leaves the rest of its reply unanswered;
        only the last reply can be in that state, since every run closes it first.
        """
        answered: set[str | None] = set()
        for message in reversed(self.messages):
            if message.role == "tool":
                answered.add(message.tool_call_id)
                continue
            if message.role == "assistant" and message.tool_calls:
                return tuple(c for c in message.tool_calls if c.id not in answered)
            return ()
        return ()

    def close(self, texts: dict[str, str], default: str) -> tuple[Message, ...]:
        """Answer every unanswered call of the last reply, so the history is a valid
        conversation again: with ``texts[call.id]``, else ``default``. The calls are not run:
        one may have had its effect already, and the model decides what to do again."""
        missing = self.unanswered()
        if not missing:
            return ()
        return self.record(*(tool(c.id, texts.get(c.id, default), name=c.name) for c in missing))

    def record(self, *batch: Message) -> tuple[Message, ...]:
        """Append ``batch`` to the history in one write (with a session: one ``add``)."""
        if self.session is not None:
            stored = self.session.add(*batch)
            if (
                isinstance(stored, tuple)
                and len(stored) == len(batch)
                and all(isinstance(m, Message) for m in stored)
            ):
                return stored
            return batch
        self._memory.extend(batch)
        return batch

    def store_view(self, request: Sequence[Message], config: LoopConfig) -> None:
        """Keep a compacted request as the session's view, so the next run starts from it."""
        set_view = getattr(self.session, "set_view", None)
        if not callable(set_view):
            return
        view = list(request)
        if config.system is not None and view and view[0] == Message("system", config.system):
            view = view[1:]  # the system prompt comes from the config, added to every run
        try:
            set_view(view)
        except (TypeError, ValueError) as exc:
            # The raw history is intact either way; a view that cannot be kept only costs the
            # next run a compaction of its own.
            log.warning("loop.view_not_stored", error=exc, agent=config.name)


def frame(
    history: Sequence[Message], config: LoopConfig, truncate: Truncate | None
) -> list[Message]:
    """The request before the prompt: system prompt, then the history as configured."""
    msgs = tuple(history)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise TypeError(f"history[{i}] must be a compaction.Message, got {type(m).__name__}")
    head: list[Message] = []
    if config.system is not None:
        head.append(Message("system", config.system))
    transcript = parse(msgs)
    kept = list(msgs[: transcript.system_end])
    rest = transcript.groups
    limit = config.history_limit
    if limit is not None:
        # Whole groups from the newest back, so a call is never sent without its results.
        count = 0
        start = len(rest)
        while start > 0 and count + len(rest[start - 1]) <= limit:
            start -= 1
            count += len(rest[start])
        rest = rest[start:]
    body = [m for g in rest for m in msgs[g.start : g.end]]
    if truncate is not None:
        body = [truncate.truncate_message(m) for m in body]
    return [*head, *kept, *body]
