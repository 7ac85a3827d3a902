"""Checks for values that come from configuration: option types, and format strings.

A ladder config is data a user (or a file) wrote, so a value of the wrong type must be refused
where it enters, naming the key, rather than coerced: ``bool("false")`` is True, so a TOML
``strict = "false"`` used to turn strict mode *on*. [`check_options`][] holds an option's
value to the type its strategy's constructor declares.

Placeholders and markers are ``str.format`` templates, and a format spec can ask for any
width: ``"{name:99999999999}"`` allocates a hundred gigabytes and dies with MemoryError.
[`check_format`][] refuses a width or precision past [`MAX_FORMAT_WIDTH`][], any field but
the ones offered, and attribute or index access (``{name.__class__}``), which would let a
config string reach into objects.
"""

from __future__ import annotations

import collections.abc
import functools
import re
import string
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union

__all__ = ["MAX_FORMAT_WIDTH", "check_bool", "check_format", "check_names", "check_options"]

#: The largest width or precision a placeholder or marker format may ask for. A note for the
#: model is a line of text; nothing legitimate pads a field to more than this.
MAX_FORMAT_WIDTH = 200

_DIGITS = re.compile(r"\d+")
_ALIGN = "<>=^"


def check_format(what: str, template: Any, fields: Mapping[str, Any]) -> str:
    """``template`` if it formats with ``fields`` and stays small; else a clear error.

    ``what`` names the option (``"ToolResults placeholder"``). Only the names in ``fields``
    may appear, plainly (no ``.attr``, ``[index]``, positional ``{}`` or nested specs), and no
    width or precision may exceed [`MAX_FORMAT_WIDTH`][].
    """
    if not isinstance(template, str):
        raise TypeError(f"{what} must be a str, got {type(template).__name__}")
    allowed = ", ".join("{" + name + "}" for name in fields)
    hint = f"It may use the fields {allowed}; write literal braces as {{{{ and }}}}"
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{what} {template!r} does not format: {exc}. {hint}") from None
    for _, field, spec, _ in parsed:
        if field is None:
            continue
        if field not in fields:
            raise ValueError(f"{what} {template!r} uses the field {{{field}}}. {hint}")
        if "{" in (spec or ""):
            raise ValueError(f"{what} {template!r}: a format spec cannot hold a field. {hint}")
        body = spec or ""
        # A fill character may be a digit ("{cut:0>5}"): it is not a width.
        if len(body) >= 2 and body[1] in _ALIGN:
            body = body[2:]
        elif body[:1] in _ALIGN:
            body = body[1:]
        for number in _DIGITS.findall(body):
            if int(number) > MAX_FORMAT_WIDTH:
                raise ValueError(
                    f"{what} {template!r}: the width or precision {int(number)} in "
                    f"{{{field}:{spec}}} is larger than {MAX_FORMAT_WIDTH}"
                )
    try:
        template.format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"{what} {template!r} does not format: {exc!r}. {hint}") from None
    return template


def check_bool(what: str, value: Any) -> bool:
    """``value`` if it is a bool (true/false in TOML), else a clear error naming ``what``."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be true or false, got {type(value).__name__} {value!r}")
    return value


def check_labels(value: Any) -> dict[str, Any]:
    """``labels`` as a dict, or a clear error: they tag every event and span of a run, so
    they are a mapping of tag names to values (``{"agent": "a1"}``), never a list."""
    if value is None:
        return {}
    if not isinstance(value, collections.abc.Mapping):
        raise TypeError(
            "labels must be a mapping of tag names to values, such as {'agent': 'a1'}; "
            f"got {type(value).__name__} {_short(value)}"
        )
    return dict(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# -- option types from constructor annotations ---------------------------------------------------

_UNKNOWN = None  # a type this module cannot check: the constructor checks it itself

_COLLECTIONS = {
    collections.abc.Iterable,
    collections.abc.Collection,
    collections.abc.Sequence,
    list,
    tuple,
    set,
    frozenset,
}


@functools.lru_cache(maxsize=64)
def _hints(cls: type) -> Mapping[str, Any]:
    try:
        return typing.get_type_hints(cls.__init__)  # type: ignore[misc]
    except Exception:  # an annotation that does not resolve here: leave it to the class
        return {}


def _matches(value: Any, hint: Any) -> bool | None:
    """Whether ``value`` is of type ``hint``; None when ``hint`` is beyond this check."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin in (Union, types.UnionType):
        answers = [_matches(value, arg) for arg in args]
        if any(answers):
            return True
        return None if _UNKNOWN in answers else False
    if origin in _COLLECTIONS and args:
        item = args[0]
        if isinstance(value, str):  # one name stands for itself (roles="tool")
            return _matches(value, item)
        if not isinstance(value, (list, tuple)):
            return False
        answers = [_matches(v, item) for v in value]
        return all(answer is not False for answer in answers)
    return _UNKNOWN


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "None"
    simple = {bool: "a bool", int: "an int", float: "a number", str: "a str", Any: "anything"}
    if hint in simple:
        return simple[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in sorted(args, key=lambda a: a is type(None)))
    if origin in _COLLECTIONS and args:
        return f"a list of {_describe(args[0]).removeprefix('a ').removeprefix('an ')}"
    return getattr(hint, "__name__", str(hint))


def check_options(cls: type, options: Mapping[str, Any]) -> None:
    """Refuse an option whose value is not of the type ``cls``'s constructor declares.

    Raises ``TypeError`` naming the option and the expected type. Options whose type
    cannot be checked here (a summariser object, say) are left to the constructor.
    """
    hints = _hints(cls)
    for key, value in options.items():
        hint = hints.get(key)
        if hint is None or _matches(value, hint) is not False:
            continue
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise TypeError(
            f"option {key!r} must be {_describe(hint)}, got {type(value).__name__} {shown}"
        )


def check_names(what: str, value: Any) -> frozenset[str]:
    """Tool names given as one name or a list of them (a config may supply either); a
    ``TypeError`` naming ``what`` (e.g. ``"Dedupe read_tools"``) for anything else."""
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise TypeError(
            f"{what} must be a tool name or a list of tool names (str), "
            f"got {type(value).__name__} {value!r}"
        )
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"{what} must hold tool names (str), got {type(name).__name__} {name!r}"
            )
    return frozenset(names)
