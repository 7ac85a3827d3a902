"""What a shell command line reads and edits, told apart.

A note that lists ``4130s/if/elif`` as a file read, or a ``sed -i`` target as read rather than
edited, sends the agent looking for files that do not exist and hides the ones it changed. So
the arguments are read as the shell splits them (the tokens ``shlex`` reads), command by
command:

- an edit is an edit: ``sed -i``, ``perl -i``, ``awk -i inplace``, the targets of ``>``,
  ``>>``, ``tee``, ``cp``/``mv`` destinations, ``touch``;
- a script argument is never a path: the first operand of ``sed``, ``awk``, ``grep`` and the
  argument of ``-e``/``-c`` are code or patterns;
- a heredoc body is data, not arguments.

A line the shell could not split on its own (an unclosed quote) is left out: guessing its
words would list code or message text as files. Lines are read one at a time, so the lines of
an argument quoted across several (``python -c "..."`` over lines, a commit message) are read
as lines of their own: a known gap, where a word may be taken for a file. Time is linear in
the command's length and the input is capped ([`MAX_COMMAND_SCAN`][]).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, overload

__all__ = ["MAX_COMMAND_SCAN", "command_files", "looks_like_path", "paths_in"]

#: Only the first this many characters of a command are read (a pasted file is not a command).
MAX_COMMAND_SCAN: Final = 4000

_EXTENSIONS: Final = (
    "py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|yaml|yml|cfg|ini|lock|c|h|cc|"
    "cpp|hpp|rs|go|java|kt|rb|php|sh|bash|zsh|html|css|scss|sql|xml|csv|log|patch|diff|ipynb|"
    "vue|svelte|swift|m|mm|cs|fs|scala|lua|pl|r|jl|dart|ex|exs|erl|hs|ml|tf|proto|gradle|mk|"
    "dockerfile|env|conf|properties|tex|bib|in|j2|jinja|tpl|bat|ps1|bak|orig|out"
)
#: A whole argument that names a file: a path with a slash, or a name with a known extension.
_WHOLE_PATH: Final = re.compile(
    r"(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+(?:[\w.@+-]*[\w@+-])?|/[\w.@+-]*[\w@+-]"
    rf"|[\w@+-][\w.@+-]*\.(?:{_EXTENSIONS})",
    re.IGNORECASE,
)
#: A path inside free text (code, a heredoc): a run with a slash, or a name with a known
#: extension. URLs are not paths.
_PATH: Final = re.compile(
    r"(?<![\w:/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[\w@+-]"
    rf"|(?<![\w/.-])[\w@+-][\w.@+-]*\.(?:{_EXTENSIONS})\b(?![/\w])",
    re.IGNORECASE,
)
_SEPARATORS: Final = frozenset({"|", "||", "&&", ";", "&", "(", ")", ";;", "|&", "\n"})
_WRITE_REDIRECTS: Final = frozenset({">", ">>", ">|", "&>", "&>>"})
_REDIRECTS: Final = _WRITE_REDIRECTS | {"<"}
_HEREDOC: Final = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w]*)\1")
#: Words that run the command after them (``sudo sed -i …`` is a sed).
_WRAPPERS: Final = frozenset({"sudo", "env", "time", "nice", "nohup", "command", "exec", "xargs"})


def looks_like_path(arg: str) -> bool:
    """Whether a whole shell argument names a file (not a URL, not an option, not a glob)."""
    if not arg or arg.startswith("-") or "://" in arg or len(arg) > 300:
        return False
    if "/" not in arg and "." not in arg:
        return False  # every form holds one (a slash, or the dot of an extension): most words
    return _WHOLE_PATH.fullmatch(arg) is not None and not arg.startswith("/dev/")


#: A run of the characters a path is made of: every path ``_PATH`` finds lies within one.
_RUN: Final = re.compile(r"[\w.@+~/-]+")
_RUN_CHARS: Final = "_.@+~/-"  # and every word character (``isalnum``, as ``\w`` reads it)
#: What every path holds: a "/" (the first form of ``_PATH``) or a known extension at its
#: end (the second). It starts with "/" or ".", which the regex engine skips to directly.
_ANCHOR: Final = re.compile(rf"/|\.(?:{_EXTENSIONS})(?![\w/])", re.IGNORECASE)


def paths_in(text: str) -> list[str]:
    """Path-like tokens in free text (code, a heredoc body), in order, each once.

    ``_PATH`` is tried only within the runs of path characters that hold an anchor (most
    of a code body is words, blanks and attribute dots, where it would be tried at every
    character). Within a run it reads what it reads in the whole text: its look-behind sees
    the character before the run, and the character after the run (no word character, no "/")
    ends a path as the run's end does."""
    found = []
    search = _ANCHOR.search
    anchor = search(text)
    while anchor is not None:
        start = at = anchor.start()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in _RUN_CHARS):
            start -= 1
        run = _RUN.match(text, at)  # never None: "/" and "." are path characters
        end = run.end() if run is not None else at + 1
        for match in _PATH.finditer(text, start, end):
            token = match.group(0).rstrip(".")
            if "://" in text[max(0, match.start() - 8) : match.start() + 3]:
                continue
            if len(token) > 1:
                found.append(token)
        anchor = search(text, end)
    return list(dict.fromkeys(found))


def _is_file(arg: str) -> bool:
    """Whether an argument in a file's place (a redirect target, a ``sed -i`` operand) is one:
    any plain word there names a file, whatever its extension."""
    if looks_like_path(arg):
        return True
    return (
        bool(arg)
        and not arg.startswith(("-", "/dev/", "&"))
        and len(arg) < 300
        and "://" not in arg
        and not any(c in arg for c in "$*?{}[]`'\"\\ \t")
        and any(c.isalnum() for c in arg)
    )


def _lines(command: str, bodies: list[str] | None = None) -> list[str]:
    """The command's lines, heredoc bodies left out (they are data; appended to ``bodies``)."""
    out: list[str] = []
    until: str | None = None
    for line in command[:MAX_COMMAND_SCAN].splitlines():
        if until is not None:
            if line.strip() == until:
                until = None
            elif bodies is not None:
                bodies.append(line)
            continue
        out.append(line)
        found = _HEREDOC.search(line)
        if found:
            until = found.group(2)
    return out


#: What makes shlex do more than split on blanks: quotes, the escape, punctuation runs.
_LEXED: Final = re.compile(r"['\"\\();<>|&]")
#: The blanks shlex splits on (str.split() would also split on other Unicode spaces).
_BLANKS: Final = re.compile(r"[ \t\r\n]+")
#: One token as ``shlex.shlex(line, posix=True, punctuation_chars=True)`` with
#: ``whitespace_split`` reads it: blanks (skipped), a run of punctuation (group 1), or a word
#: (group 2) of plain characters, single-quoted text (no escapes inside), double-quoted text
#: (``\\`` escapes) and escaped characters. An unclosed quote or a trailing escape matches
#: nothing, where shlex raises.
_TOKEN: Final = re.compile(
    r"[ \t\r\n]+|([();<>|&]+)"
    r"|((?:[^ \t\r\n();<>|&'\"\\]+|'[^']*'|\"(?:[^\"\\]|\\.)*\"|\\.)+)",
    re.DOTALL,
)
#: The parts of a word, to take its quotes and escapes out as shlex does.
_PART: Final = re.compile(r"[^'\"\\]+|'([^']*)'|\"((?:[^\"\\]|\\.)*)\"|\\(.)", re.DOTALL)
#: Inside double quotes only ``\\`` and ``\"`` are escapes; any other backslash stays.
_QUOTED_ESCAPE: Final = re.compile(r"\\([\\\"])")


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    out: list[str] = []
    for part in _PART.finditer(word):
        single, double, escaped = part.groups()
        if single is not None:
            out.append(single)
        elif double is not None:
            out.append(_QUOTED_ESCAPE.sub(r"\1", double) if "\\" in double else double)
        elif escaped is not None:
            out.append(escaped)
        else:
            out.append(part.group(0))
    return "".join(out)


def _split(line: str) -> list[str] | None:
    """The tokens shlex (POSIX, punctuation runs, split on blanks) reads from ``line``, or None
    where it raises (an unclosed quote, a trailing escape).

    The same tokens as ``shlex``, read a token at a time by one regex instead of its
    per-character loop (several times slower, and run on every command a ledger reads); the
    equivalence is checked against shlex itself in ``tests/test_shell_split.py``."""
    if _LEXED.search(line) is None:
        # Most lines are plain words: split on blanks.
        return [word for word in _BLANKS.split(line) if word]
    tokens: list[str] = []
    pos = 0
    end = len(line)
    match_at = _TOKEN.match
    while pos < end:
        token = match_at(line, pos)
        if token is None:
            return None  # an unclosed quote or a trailing escape: the shell would refuse it too
        punctuation, word = token.groups()
        if punctuation is not None:
            tokens.append(punctuation)
        elif word is not None:
            tokens.append(_unquote(word))
        pos = token.end()
    return tokens


def _simple_commands(tokens: Sequence[str]) -> list[list[str]]:
    if _SEPARATORS.isdisjoint(tokens):
        return [list(tokens)] if tokens else []  # one command: most lines
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _operands(args: Sequence[str], takes_value: frozenset[str] = frozenset()) -> list[str]:
    """Arguments that are not options (nor an option's value)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("-") and arg != "-":
            skip = arg in takes_value
            continue
        out.append(arg)
    return out


def _sed(args: Sequence[str]) -> tuple[list[str], list[str]]:
    in_place = any(a.startswith("-i") or a.startswith("--in-place") for a in args) or any(
        a.startswith("-") and not a.startswith("--") and "i" in a[1:] and "e" not in a[1:]
        for a in args
    )
    scripted = any(a in ("-e", "-f", "--expression", "--file") for a in args)
    operands = _operands(args, frozenset({"-e", "-f", "--expression", "--file", "-l"}))
    files = operands if scripted else operands[1:]
    return ([], files) if in_place else (files, [])


def _perl(args: Sequence[str]) -> tuple[list[str], list[str]]:
    in_place = any(a.startswith("-") and not a.startswith("--") and "i" in a for a in args)
    scripted = any(a.startswith("-") and not a.startswith("--") and "e" in a.lower() for a in args)
    operands: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            # ``-e CODE``, ``-pe CODE``, ``-0pi -e CODE``: the code follows an option ending in e
            skip = arg[-1:] in ("e", "E") and not arg.startswith("--")
            continue
        operands.append(arg)
    files = operands if scripted else operands[1:]
    return ([], files) if in_place else (files, [])


def _awk(args: Sequence[str]) -> tuple[list[str], list[str]]:
    in_place = any(a == "inplace" for a in args) and "-i" in args
    scripted = "-f" in args
    operands = _operands(args, frozenset({"-f", "-F", "-v", "-i"}))
    files = operands if scripted else operands[1:]
    return ([], files) if in_place else (files, [])


def _pattern_first(args: Sequence[str]) -> tuple[list[str], list[str]]:
    scripted = any(a in ("-e", "-f", "--regexp", "--file") for a in args)
    operands = _operands(
        args, frozenset({"-e", "-f", "--regexp", "--file", "-m", "-A", "-B", "-C"})
    )
    return (operands if scripted else operands[1:]), []


def _copy(args: Sequence[str]) -> tuple[list[str], list[str]]:
    operands = _operands(args, frozenset({"-t", "-S"}))
    return operands[:-1], operands[-1:]


def _tee(args: Sequence[str]) -> tuple[list[str], list[str]]:
    return [], _operands(args)


def _touch(args: Sequence[str]) -> tuple[list[str], list[str]]:
    return [], _operands(args)


def _interpreter(args: Sequence[str]) -> tuple[list[str], list[str]]:
    # ``python -c CODE``, ``bash -c CODE``, ``node -e CODE``: the code is no path
    operands = _operands(args, frozenset({"-c", "-e", "-m", "-W", "-X"}))
    return operands, []


def _code(argv: Sequence[str]) -> list[str]:
    """The code an interpreter is given inline (``-c``/``-e``), where paths are mentioned."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-c", "-e")]


_INTERPRETERS: Final = frozenset({"python", "python3", "bash", "sh", "node"})
_COMMANDS: Final[dict[str, Callable[[Sequence[str]], tuple[list[str], list[str]]]]] = {
    "sed": _sed,
    "gsed": _sed,
    "perl": _perl,
    "awk": _awk,
    "gawk": _awk,
    "grep": _pattern_first,
    "egrep": _pattern_first,
    "fgrep": _pattern_first,
    "rg": _pattern_first,
    "ag": _pattern_first,
    "cp": _copy,
    "mv": _copy,
    "tee": _tee,
    "touch": _touch,
    "python": _interpreter,
    "python3": _interpreter,
    "bash": _interpreter,
    "sh": _interpreter,
    "node": _interpreter,
}


def _one(argv: list[str], read: dict[str, None], edited: dict[str, None]) -> None:
    # Redirections first: their targets are what the command writes (or reads).
    words: list[str] = argv if _REDIRECTS.isdisjoint(argv) else []
    i = len(argv) if words is argv else 0
    while i < len(argv):
        token = argv[i]
        if token in _WRITE_REDIRECTS or token == "<":
            target = argv[i + 1] if i + 1 < len(argv) else ""
            if target == "&":  # ``2>&1``
                i += 3
                continue
            if _is_file(target):
                (read if token == "<" else edited)[target] = None
            i += 2
            continue
        words.append(token)
        i += 1
    while words and (("=" in words[0] and not words[0].startswith("-")) or words[0] in _WRAPPERS):
        words = words[1:]
    if not words:
        return
    name = words[0].rsplit("/", 1)[-1]
    handler = _COMMANDS.get(name)
    named: list[str] = list(words[1:])
    changed: list[str] = []
    if handler is not None:
        named, changed = handler(words[1:])
    for arg in changed:
        if _is_file(arg):
            edited[arg] = None
    for arg in named:
        if looks_like_path(arg):
            read[arg] = None


@overload
def command_files(command: str) -> tuple[list[str], list[str]]: ...
@overload
def command_files(
    command: str, *, mentions: Literal[True]
) -> tuple[list[str], list[str], list[str]]: ...


def command_files(command: str, *, mentions: bool = False) -> Any:
    """``(read, edited)``: the files a shell command line reads and the ones it changes, in
    order, each once (a file both read and edited is edited). With ``mentions``, a third list:
    paths merely named in the code it carries (a heredoc body, ``python -c`` code), which an
    agent may want to find again but which are no argument of the command."""
    read: dict[str, None] = {}
    edited: dict[str, None] = {}
    bodies: list[str] = []
    for line in _lines(command, bodies):
        tokens = _split(line)
        if tokens is None:
            continue
        for argv in _simple_commands(tokens):
            _one(argv, read, edited)
            if mentions and argv and argv[0].rsplit("/", 1)[-1] in _INTERPRETERS:
                bodies.extend(_code(argv))
    out_read = [p for p in read if p not in edited]
    if not mentions:
        return out_read, list(edited)
    if not bodies:
        return out_read, list(edited), []
    named = [p for p in paths_in("\n".join(bodies)) if p not in read and p not in edited]
    return out_read, list(edited), named
