"""The size a conversation must fit: an int, or a [`Budget`][] that reserves room for a reply."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Budget", "resolve_limit", "resolve_target"]


def _int(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Budget.{attribute.name} must be an int, got {type(value).__name__}")


@attrs.frozen(slots=True)
class Budget:
    """``max_tokens`` the model takes, of which ``reserved_tokens`` are kept for its answer.

    The conversation must fit in ``available = max_tokens - reserved_tokens``.
    """

    max_tokens: int = attrs.field(validator=_int)
    reserved_tokens: int = attrs.field(default=0, validator=_int)

    def __attrs_post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError(f"Budget.max_tokens must be positive, got {self.max_tokens}")
        if self.reserved_tokens < 0:
            raise ValueError(
                f"Budget.reserved_tokens must not be negative, got {self.reserved_tokens}"
            )
        if self.reserved_tokens >= self.max_tokens:
            raise ValueError(
                f"Budget.reserved_tokens ({self.reserved_tokens}) must be less than max_tokens "
                f"({self.max_tokens}): nothing would be left for the conversation"
            )

    @property
    def available(self) -> int:
        """Tokens the conversation may take."""
        return self.max_tokens - self.reserved_tokens


def resolve_target(target: int | Budget) -> int:
    """The token limit ``target`` stands for; a clear error for anything else."""
    if isinstance(target, Budget):
        return target.available
    if isinstance(target, bool) or not isinstance(target, int):
        raise TypeError(
            f"target must be a positive int or a Budget, got {type(target).__name__} {target!r}"
        )
    if target <= 0:
        raise ValueError(f"target must be a positive number of tokens, got {target}")
    return target


def resolve_limit(limit: int | Budget | None, target: int) -> int:
    """The hard limit ``limit`` stands for, given the run's resolved ``target``.

    A run has two sizes: the target, where droppable content aims, and the hard limit, what
    the request must fit (a model's window less its reserve). Protected content is cut only
    down to the limit. None means the target itself (a plain ``compact(target=...)`` promises
    nothing bigger); a limit below the target is a mistake the caller must hear about, since
    the target would then promise a request that cannot be sent.
    """
    if limit is None:
        return target
    try:
        value = resolve_target(limit)
    except (TypeError, ValueError) as exc:
        raise type(exc)(str(exc).replace("target", "limit", 1)) from None
    if value < target:
        raise ValueError(
            f"limit ({value}) must be at least the target ({target}): the limit is what the "
            "request must fit, the target where compaction aims below it"
        )
    return value
