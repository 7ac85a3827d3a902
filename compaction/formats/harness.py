"""Recognising the text an agent harness writes into the user role (format errors, timeouts).

Agent harnesses answer a malformed or slow step with a reply of their own, sent as a user
message: "Please always provide EXACTLY ONE action…", "The command … was cancelled…". A person
never wrote it, so the readers mark it synthetic (``meta["synthetic"]``) and it is never taken
for the task (taken for one, the newest format error became the task anchor and the real
task was dropped as old history).

A reply is recognised by the literal opening of the template it was rendered from (the text
before the template's first field, Jinja ``{{ }}``/``{% %}`` or Python ``{name}``): the
trajectory's own config's templates when it carries them, the harness's defaults as well.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..memory.transcript import SYNTHETIC_KEY

__all__ = ["harness_prefixes", "synthetic_meta", "templates_in"]

_FIELD: Final = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|\{[^{}\s]*\}", re.DOTALL)
#: A template's literal opening shorter than this is too generic to recognise a reply by
#: (a template that starts with its field, like ``{{observation}}``, has none at all).
MIN_PREFIX: Final = 16


def templates_in(config: Any, keys: re.Pattern[str], *, depth: int = 8) -> list[str]:
    """Every str value in the nested ``config`` whose key matches ``keys`` (bounded depth)."""
    found: list[str] = []
    if depth <= 0 or not isinstance(config, Mapping):
        return found
    for key, value in config.items():
        if isinstance(value, str) and isinstance(key, str) and keys.search(key):
            found.append(value)
        elif isinstance(value, Mapping):
            found.extend(templates_in(value, keys, depth=depth - 1))
    return found


def harness_prefixes(templates: Iterable[str]) -> tuple[str, ...]:
    """The literal openings (long enough to be telling) of ``templates``, longest first."""
    prefixes = {_FIELD.split(t, 1)[0].strip() for t in templates}
    return tuple(sorted((p for p in prefixes if len(p) >= MIN_PREFIX), key=len, reverse=True))


def synthetic_meta(content: str, prefixes: tuple[str, ...]) -> dict[str, Any]:
    """``{"synthetic": True}`` when ``content`` opens like one of the harness's replies."""
    return {SYNTHETIC_KEY: True} if prefixes and content.lstrip().startswith(prefixes) else {}
