"""Which files a shell command edits, by rules of its own (not ``compaction.memory.shell``,
so a check does not grade the ledger by the ledger's reader).

An edit is: ``sed -i`` (its file operands: the script, given inline or with ``-e``, is not a
path, nor a ``-f`` script file), ``perl -i`` (the files after its ``-e`` script), a shell
output redirection (``>``, ``>>``, ``&>``, ``>|`` and fd-numbered ``2>``; not ``/dev/null``,
not ``>&1``), and ``tee`` (its file operands). Heredoc bodies are never parsed as commands.
Nothing else counts: ``cat``, ``grep``, ``sed -n`` read; ``cp``/``mv``/``python`` scripts may
write, but a log does not show what, so they are left out.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["shell_edits"]

_HEREDOC: Final = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w]*)\1")
_READS: Final = frozenset({"<", "<<", "<<<", "<<-", ">&", "<&", "&>&"})
_REDIRECTS: Final = frozenset({">", ">>", "&>", "&>>", ">|"})
_NOT_FILES: Final = ("/dev/null", "/dev/stdout", "/dev/stderr")


def _strip_heredocs(command: str) -> str:
    """``command`` with every heredoc body removed (the line that opens it stays)."""
    lines = command.split("\n")
    out: list[str] = []
    ending: list[str] = []
    for line in lines:
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending.extend(m.group(2) for m in _HEREDOC.finditer(line))
    return "\n".join(out)


_OPERATOR_CHARS: Final = frozenset(";&|<>()")


def _tokens(command: str) -> list[tuple[str, bool]]:
    """Shell words and operators, as ``(text, is_operator)``. Quotes and backslashes are
    honoured and removed (a quoted ``;`` or ``>``, in a sed script say, is part of a word);
    a newline is an operator (it ends a command). An unclosed quote runs to the end."""
    tokens: list[tuple[str, bool]] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in " \t\r\n" or ch in _OPERATOR_CHARS:
            if in_word:
                tokens.append(("".join(word), False))
                word, in_word = [], False
            if ch in " \t\r":
                i += 1
                continue
            j = i + 1
            while ch != "\n" and j < n and command[j] in _OPERATOR_CHARS:
                j += 1
            tokens.append((command[i:j], True))
            i = j
            continue
        in_word = True
        if ch == "\\" and i + 1 < n:
            word.append(command[i + 1])
            i += 2
        elif ch == "'":
            close = command.find("'", i + 1)
            close = n if close < 0 else close
            word.append(command[i + 1 : close])
            i = close + 1
        elif ch == '"':
            i += 1
            while i < n and command[i] != '"':
                if command[i] == "\\" and i + 1 < n and command[i + 1] in '"\\$`':
                    i += 1
                word.append(command[i])
                i += 1
            i += 1
        else:
            word.append(ch)
            i += 1
    if in_word:
        tokens.append(("".join(word), False))
    return tokens


def _sed(words: list[str]) -> list[str]:
    in_place = any(w.startswith("-i") or w.startswith("--in-place") for w in words[1:])
    if not in_place:
        return []
    files: list[str] = []
    script_given = False
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-e", "--expression", "-f", "--file"):
            script_given = True
            i += 2
            continue
        if word.startswith("--expression=") or word.startswith("--file="):
            script_given = True
        elif word == "" and words[i - 1] == "-i":
            pass  # BSD sed: ``-i ''`` is an empty backup suffix
        elif word.startswith("-") and len(word) > 1:
            pass
        elif not script_given:
            script_given = True  # the first operand is the script, not a path
        else:
            files.append(word)
        i += 1
    return files


def _perl(words: list[str]) -> list[str]:
    flags = [w for w in words[1:] if w.startswith("-") and not w.startswith("--")]
    if not any("i" in f[1:].split(".")[0] for f in flags):
        return []
    files: list[str] = []
    script_given = False
    i = 1
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            if word.rstrip("0123456789").endswith(("e", "E")) and "." not in word:
                script_given = True
                i += 2
                continue
        elif not script_given:
            script_given = True
        else:
            files.append(word)
        i += 1
    return files


def _tee(words: list[str]) -> list[str]:
    return [w for w in words[1:] if not w.startswith("-")]


def shell_edits(command: str) -> tuple[str, ...]:
    """The files ``command`` edits, in the order it names them."""
    tokens = _tokens(_strip_heredocs(command))
    edited: list[str] = []
    words: list[str] = []

    def flush() -> None:
        if words:
            program = words[0].rsplit("/", 1)[-1]
            handler = {"sed": _sed, "perl": _perl, "tee": _tee}.get(program)
            if handler is not None:
                edited.extend(handler(list(words)))
            words.clear()

    i = 0
    while i < len(tokens):
        text, operator = tokens[i]
        if not operator:
            words.append(text)
        elif text in _REDIRECTS:
            if words and words[-1].isdigit():
                words.pop()  # the fd of ``2>``
            if i + 1 < len(tokens) and not tokens[i + 1][1]:
                target = tokens[i + 1][0]
                if target and not target.startswith(_NOT_FILES):
                    edited.append(target)
                i += 1
        elif text in _READS:
            i += 1  # an input, a heredoc marker or an fd duplication: no file written
        else:
            flush()  # ; & && | || ( ) newline: the command ends
        i += 1
    flush()
    return tuple(dict.fromkeys(e for e in edited if e))
