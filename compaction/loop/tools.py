"""Tools: Python callables the model may call, with the JSON schema it sees."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = ["Tool"]


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
    """A Python callable the model may call. Build one with [`from_function`][].

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


def _from_spec(item: Any) -> Tool | None:
    """A tool object that states its own spec (a session's ``recall_tool()`` or
    ``search_tool()``: ``name``, ``description``, ``parameters`` and a callable) as a Tool,
    so its schema is the one it states rather than one read from its signature."""
    spec = getattr(item, "spec", None)
    if not isinstance(spec, Mapping) or not callable(item):
        return None
    return Tool(
        name=str(spec["name"]),
        function=item,
        description=str(spec.get("description", "")),
        parameters=dict(spec.get("parameters", {"type": "object", "properties": {}})),
    )


def _tools(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    for item in tools:
        made = item if isinstance(item, Tool) else (_from_spec(item) or Tool.from_function(item))
        if made.name in table:
            raise ValueError(f"two tools are named {made.name!r}; tool names must be unique")
        table[made.name] = made
    return table


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
