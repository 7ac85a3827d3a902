"""Tool-call ids as Anthropic accepts them: ``^[a-zA-Z0-9_-]+$``.

Other providers and agent logs use ids Anthropic refuses (Kimi and vLLM's
``functions.bash:0``, a hand-made ``call 1``), and a request with one is a 400. So
[`anthropic_id`][] maps every id to one it accepts, by a function of the id alone:

- a valid id is kept as it is (Anthropic's own ``toolu_...`` ids round-trip untouched);
- any other id becomes its allowed characters (others replaced by ``_``, at most 40 kept) and
  ``_`` plus 16 hex digits of its SHA-256.

Being a function of the id alone, the same id gets the same answer in every request, so a
``tool_use`` and its ``tool_result`` always match, and the prompt cache (which compares the
request's prefix byte for byte) keeps hitting from one call to the next. Two different ids
could only meet if one were a valid id ending in exactly the digest of the other: a 64-bit
coincidence (a collision would need a SHA-256 preimage to construct).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

__all__ = ["anthropic_id"]

_VALID: Final = re.compile(r"[a-zA-Z0-9_-]+")
_INVALID_CHAR: Final = re.compile(r"[^a-zA-Z0-9_-]")
_KEPT: Final = 40


def anthropic_id(raw: str) -> str:
    """``raw`` as a tool-use id Anthropic accepts (see the module docstring)."""
    if _VALID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = _INVALID_CHAR.sub("_", raw[:_KEPT])
    return f"{readable}_{digest}" if readable else f"id_{digest}"
