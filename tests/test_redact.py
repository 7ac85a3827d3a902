"""The bound every log and span string goes through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from compaction._redact import LIMIT, bound, describe_error


@given(st.text(max_size=5000), st.integers(min_value=40, max_value=3000))
def test_bound_never_exceeds_the_limit_and_keeps_short_text(text: str, limit: int) -> None:
    out = bound(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
    else:
        assert "chars cut" in out
        assert text.startswith(out[: limit // 2])


def test_describe_error_gives_the_type_and_text_only_when_asked() -> None:
    error = ValueError("secret " * 1000)
    assert describe_error(error, text=False) == "ValueError"
    with_text = describe_error(error, text=True)
    assert with_text.startswith("ValueError: secret") and len(with_text) <= LIMIT
    assert describe_error(KeyError("k"), text=False) == "KeyError"
