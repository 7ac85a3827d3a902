"""The ledger's shell reader splits a command line exactly as :mod:`shlex` does, and finds the
paths in code exactly as its path regex does over the whole text.

``compaction.memory.shell`` reads every command a ledger records; shlex's per-character loop was
most
of that cost, so the line is split by a regex instead. What the reader concludes (a file read, a
file edited, a sed script that is no path) depends on the tokens, so the tokens must be shlex's,
quote for quote and escape for escape, and an unclosed quote must be refused as shlex refuses it.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory.shell import _PATH, _WHOLE_PATH, _split, looks_like_path, paths_in

from .conftest import transcript_files


def _shlex(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


#: What the shell treats specially, what it does not, and the blanks it does not split on.
_ALPHABET = [*"ab ;|&()<>'\"\\\t\r-=.#$~*?/", "é", "\x0b", "\u2028", "\x00", "ß"]


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=24))
def test_a_line_splits_into_shlex_tokens(line: str) -> None:
    assert _split(line) == _shlex(line)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_any_text_splits_into_shlex_tokens(line: str) -> None:
    assert _split(line) == _shlex(line)


def test_quotes_escapes_and_punctuation_as_shlex_reads_them() -> None:
    cases = [
        "sed -i 's/a b/c/' x.py && cat x.py",
        'grep -n "def \\"x\\" \\$y \\\\" a.py 2>&1 | head',
        "echo a\\ b 'it''s' \"\" ''",
        "cat <<'EOF' > out.txt",
        "python -c 'print(1)';ls",
        "echo 'unclosed",
        'echo "unclosed \\"',
        "echo trailing\\",
    ]
    for line in cases:
        assert _split(line) == _shlex(line), line


@pytest.mark.transcripts
@pytest.mark.parametrize("path", transcript_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_command_of_a_real_transcript_splits_as_shlex_does(path) -> None:
    """Every line of every command the agent ran, as the ledger reads it: the same tokens."""
    from compaction.formats import load
    from compaction.memory.facts import COMMAND_KEYS, call_arguments

    for message in load(path).messages:
        for call in message.tool_calls:
            args = call_arguments(call.arguments)
            for key in COMMAND_KEYS:
                value = args.get(key)
                for line in value.splitlines() if isinstance(value, str) else ():
                    assert _split(line) == _shlex(line), line


def _paths_reference(text: str) -> list[str]:
    """Path-like tokens by the path regex run over the whole text."""
    found = []
    for match in _PATH.finditer(text):
        token = match.group(0).rstrip(".")
        if "://" in text[max(0, match.start() - 8) : match.start() + 3]:
            continue
        if len(token) > 1:
            found.append(token)
    return list(dict.fromkeys(found))


#: What a path is made of, what ends one, and the case forms the case-blind regex accepts.
_PATH_PIECES = [
    *"aB/.~:@+-_ \n'(9",
    "..",
    "py",
    "txt",
    "c",
    ".PY",
    "in",
    "http://",
    "src/",
    "x.py",
    "\u017f",  # long s, which the case-blind regex takes for "s"
    "\u212a",  # Kelvin sign, for "k"
    "\u00e9",
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PATH_PIECES), max_size=14).map("".join))
def test_paths_in_free_text_are_the_ones_the_path_regex_finds(text: str) -> None:
    """paths_in tries the regex only within runs that can hold a path: the same paths."""
    assert paths_in(text) == _paths_reference(text)


# -- a whole argument that names a file ------------------------------------------------------------

_ARG_PIECES = ["a", "Z", "9", "_", "é", "/", ".", "..", "~", "-", "@", "+", "py", "PY", "md", " "]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_ARG_PIECES), max_size=8).map("".join))
def test_an_argument_is_a_path_exactly_when_the_path_regex_reads_one(arg: str) -> None:
    # the shortcut (no slash and no dot: no path) answers what the regex answers
    reference = (
        bool(arg)
        and not arg.startswith("-")
        and "://" not in arg
        and len(arg) <= 300
        and _WHOLE_PATH.fullmatch(arg) is not None
        and not arg.startswith("/dev/")
    )
    assert looks_like_path(arg) is reference
