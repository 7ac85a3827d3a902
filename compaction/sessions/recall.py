"""``recall`` as a tool the model can call: get back a message a strategy removed or rewrote.

The spec is plain Python data (JSON schema), so it plugs into any provider; ``openai()`` and
``anthropic()`` give the two common wrappings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from ..messages import Message


class Recalls(Protocol):
    """What the tool needs from a session (a Protocol, so this module imports no session)."""

    name: str

    def recall(self, ref: str) -> Message | None: ...


__all__ = [
    "MAX_ID_CHARS",
    "RecallTool",
    "SearchTool",
    "id_problem",
    "parse_arguments",
    "render_recalled",
]

DESCRIPTION: Final = (
    "Look up the full original text of an earlier message of this conversation that was "
    "summarised, shortened or removed to save space. Pass a recall id a compaction note or "
    "placeholder names, or a note's whole range as it shows it ('sha1:… … sha1:…') to list "
    "every message the note stands for."
)

#: The longest id looked up: every id the library writes is far shorter (a ``sha1:`` ref is
#: 21 characters, framework ids a few dozen, a note's range under 50); a longer one is
#: refused in a sentence of bounded length, never searched for nor echoed back.
MAX_ID_CHARS: Final = 512


def id_problem(ref: Any) -> str | None:
    """Why ``ref`` cannot be looked up (a sentence of bounded length), or None when it can."""
    if not isinstance(ref, str) or not ref:
        return 'recall needs an "id" argument (a non-empty string)'
    if len(ref) > MAX_ID_CHARS:
        return f"no message with an id of {len(ref)} characters (ids are at most {MAX_ID_CHARS})"
    return None


def parse_arguments(arguments: Any) -> tuple[str | None, str | None]:
    """``(id, None)`` for a tool call's ``arguments`` (JSON text or a mapping) naming an id,
    else ``(None, why)``: a sentence. Deep nesting is an answer, not a crash."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            return None, f'recall needs JSON arguments like {{"id": "..."}}: {reason}'
    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("id"), str):
        return None, 'recall needs an "id" argument (a string)'
    return arguments["id"], None


PARAMETERS: Final = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "The id of the message to recall."}},
    "required": ["id"],
    "additionalProperties": False,
}


def render_recalled(message: Message) -> str:
    """The text a model gets back for ``message``: its content, then any tool calls it made."""
    parts = [message.content] if message.content else []
    parts.extend(f"[tool call {c.id}: {c.name}({c.arguments})]" for c in message.tool_calls)
    return "\n".join(parts)


class RecallTool:
    """A tool spec (``name``, ``description``, ``parameters``) and the callable behind it."""

    name: Final = "recall"
    description: Final = DESCRIPTION

    def __init__(self, session: Recalls) -> None:
        self._session = session

    @property
    def parameters(self) -> dict[str, Any]:
        return json.loads(json.dumps(PARAMETERS))

    @property
    def spec(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``: the provider-neutral function spec."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def openai(self) -> dict[str, Any]:
        """The spec as an OpenAI chat-completions ``tools`` entry."""
        return {"type": "function", "function": self.spec}

    def anthropic(self) -> dict[str, Any]:
        """The spec as an Anthropic messages ``tools`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        }

    def __call__(self, id: str) -> str:
        """The original text of message ``id``, or a sentence saying there is none (an id too
        long to be one is not echoed back)."""
        problem = id_problem(id)
        if problem is not None:
            return problem
        message = self._session.recall(id)
        if message is None:
            return f"no message with id {id!r} in session {self._session.name!r}"
        return render_recalled(message)

    def invoke(self, arguments: str | Mapping[str, Any]) -> str:
        """Answer a tool call's ``arguments`` (JSON text or a mapping) as the tool result text."""
        ref, problem = parse_arguments(arguments)
        if ref is None:
            return problem or 'recall needs an "id" argument (a string)'
        return self(ref)

    def __repr__(self) -> str:
        return f"<RecallTool for session {self._session.name!r}>"


class Searches(Protocol):
    """What the search tool needs from a session."""

    name: str

    def search(self, query: str, limit: int = 5) -> Any: ...


SEARCH_DESCRIPTION: Final = (
    "Search the earlier messages of this conversation that were summarised, shortened or "
    "removed to save space. Pass a few words (an error name, a file, a test id); you get "
    "snippets with message ids, and 'recall' gives a message back whole."
)
SEARCH_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to look for."},
        "limit": {"type": "integer", "description": "At most this many results (default 5)."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class SearchTool(RecallTool):
    """``search`` as a tool: the spec, and the callable answering with ranked snippets."""

    name: Final = "search"  # type: ignore[misc]
    description: Final = SEARCH_DESCRIPTION  # type: ignore[misc]

    def __init__(self, session: Searches) -> None:
        self._searcher = session

    @property
    def parameters(self) -> dict[str, Any]:
        return json.loads(json.dumps(SEARCH_PARAMETERS))

    def __call__(self, query: str, limit: int = 5) -> str:  # type: ignore[override]
        """The matching earlier messages as text for the model (ids for ``recall``)."""
        from ..memory.search import MAX_HITS, render_hits

        if not isinstance(query, str):
            return 'search needs a "query" argument (a string)'
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            limit = 5
        return render_hits(query, self._searcher.search(query, min(limit, MAX_HITS)))

    def invoke(self, arguments: str | Mapping[str, Any]) -> str:
        """Answer a tool call's ``arguments`` (JSON text or a mapping)."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except (json.JSONDecodeError, RecursionError):
                return 'search needs JSON arguments like {"query": "..."}'
        if not isinstance(arguments, Mapping) or not isinstance(arguments.get("query"), str):
            return 'search needs a "query" argument (a string)'
        return self(arguments["query"], arguments.get("limit", 5))

    def __repr__(self) -> str:
        return f"<SearchTool for session {self._searcher.name!r}>"
