"""Small wording helpers for text people and models read."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` and ``noun`` agreeing: ``"1 earlier message"``, ``"3 earlier messages"``."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural_form if plural_form is not None else noun + 's'}"
