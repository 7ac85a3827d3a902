"""The last check every reader makes: what it returns is a valid conversation."""

from __future__ import annotations

from ..validate import problems
from .errors import FormatError
from .loaded import Loaded

__all__ = ["finish"]


def finish(loaded: Loaded) -> Loaded:
    """``loaded`` unchanged when it passes [`compaction.validate.validate`][].

    Readers repair what agent logs get wrong; anything still invalid after that is a shape we
    do not understand, reported as a [`FormatError`][] rather than handed on.
    """
    found = problems(loaded.messages)
    if found:
        raise FormatError(
            loaded.path,
            f"read as {loaded.format}, but the conversation is not valid: {found[0]}",
        )
    return loaded
