"""Dedupe tells a shell line that only shows files (``cat x``, ``nl -ba x | sed -n 1,80p``) from
one that does more, and the answer is shlex's: the words as ``shlex.split`` reads them. A line
whose first word (no quote, no escape in it) is no viewer is answered without splitting it;
that shortcut must answer exactly as the split does, whatever the line."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.strategies.dedupe import _MAX_VIEW_CHARS, _NOT_A_VIEW, _VIEWERS, _is_view


def _by_shlex(command: str) -> bool:
    """The rule read from shlex's words alone, with no shortcut."""
    if len(command) > _MAX_VIEW_CHARS or any(c in command for c in _NOT_A_VIEW):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    start = True
    for word in words:
        if word == "|":
            start = True
            continue
        if start and word not in _VIEWERS:
            return False
        if word in ("-i", "--in-place") or word.startswith(("-i", "--in-place=")):
            return False
        start = False
    return not start


_WORDS = [*sorted(_VIEWERS), "rm", "ls", "-i", "-n", "1,5p", "x.py", "|", "c'at'", '"cat"']
_CHARS = [*" \t\r|'\"\\-ica", "\x0b", "\u00a0", "é"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_WORDS + _CHARS), max_size=8).map("".join))
def test_the_shortcut_answers_as_shlex_does(command: str) -> None:
    assert _is_view(command) == _by_shlex(command)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30))
def test_any_text_answers_as_shlex_does(command: str) -> None:
    assert _is_view(command) == _by_shlex(command)


def test_views_and_others() -> None:
    assert _is_view("cat a.py")
    assert _is_view("  nl -ba x.py | sed -n 1,80p")
    assert _is_view("'cat' a.py")  # quoted, read by shlex
    assert not _is_view("sed -i s/a/b/ x.py")
    assert not _is_view("rm cat")
    assert not _is_view("cat\u00a0a.py")  # one word to shlex: no viewer
