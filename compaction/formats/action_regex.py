"""Finding the action in a mini-swe-agent turn, with a regex the file itself supplies.

mini-swe-agent stores its ``action_regex`` in the trajectory (``info.config.agent``), and the
reader must use it to find what the agent ran. But a file is untrusted input, and Python's
``re`` backtracks: a 319-byte file with a pattern like ``(a|aa)+$`` pinned a CPU for good. So:

- the default pattern (what nearly every trajectory uses) is matched by ``_default_actions``,
  a linear-time scan that gives exactly what ``re.finditer`` gives for it (a property test
  checks the two agree), so ordinary files never pay for anything below;
- any other pattern is checked (a string, at most [`MAX_PATTERN`][] characters, compiles, at
  most one group; else a [`FormatError`][]) and then run in a separate Python process
  that is killed after [`SECONDS`][]: no ``re`` call of ours can be interrupted in-process,
  and a core dependency with timeouts (the ``regex`` package) is not worth one reader. A
  pattern that does not finish in time is a [`FormatError`][] naming the file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from .errors import FormatError

__all__ = ["DEFAULT", "MAX_PATTERN", "MSWEA", "SECONDS", "Action", "find_actions"]

#: mini-swe-agent's own default ``action_regex`` (1.x).
DEFAULT: Final = r"```bash\s*\n(.*?)\n```"
#: mini-swe-agent 2's default ``action_regex``: its own fence, which no other text uses.
MSWEA: Final = r"```mswea_bash_command\s*\n(.*?)\n```"
_OPENERS: Final = {DEFAULT: "```bash", MSWEA: "```mswea_bash_command"}
#: Longest pattern accepted from a file.
MAX_PATTERN: Final = 1000
#: Wall-clock bound for running a file's own pattern over all of its turns.
SECONDS: Final = 5.0
_FIELD: Final = "info.config.agent.action_regex"


class Action(NamedTuple):
    """The single action of a turn: the match's span and the command (its group)."""

    start: int
    end: int
    command: str


def _pattern(value: Mapping[str, Any], path: str | Path, texts: Sequence[str]) -> str:
    info = value.get("info")
    config = info.get("config") if isinstance(info, Mapping) else None
    # 1.x keeps it in the agent's config, 2.x in the model's (the text-based models).
    holders = [config.get(k) for k in ("agent", "model")] if isinstance(config, Mapping) else []
    agent = next((h for h in holders if isinstance(h, Mapping) and "action_regex" in h), None)
    if agent is None:
        return MSWEA if any(_OPENERS[MSWEA] in t for t in texts) else DEFAULT
    pattern = agent["action_regex"]
    if not isinstance(pattern, str):
        raise FormatError(path, f"{_FIELD}: expected a regular expression (text)")
    if len(pattern) > MAX_PATTERN:
        raise FormatError(path, f"{_FIELD}: longer than {MAX_PATTERN} characters")
    try:
        compiled = re.compile(pattern, re.DOTALL)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise FormatError(path, f"{_FIELD}: not a valid regular expression ({exc})") from None
    if compiled.groups > 1:
        raise FormatError(path, f"{_FIELD}: expected at most one group (the command)")
    return pattern


def find_actions(
    value: Mapping[str, Any], texts: Sequence[str], path: str | Path
) -> list[Action | None]:
    """For each text, its [`Action`][] when the file's pattern matches it exactly once
    (mini-swe-agent runs nothing for zero or several), else None."""
    pattern = _pattern(value, path, texts)
    opener = _OPENERS.get(pattern)
    if opener is not None:
        return [_single(_default_actions(text, opener=opener)) for text in texts]
    if not texts:
        return []
    return _bounded(pattern, texts, path)


def _single(found: list[Action]) -> Action | None:
    return found[0] if len(found) == 1 else None


_CLOSE: Final = "\n```"
_SPACE: Final = frozenset(" \t\n\r\f\v")


def _default_actions(text: str, limit: int = 2, opener: str = "```bash") -> list[Action]:
    """``re.finditer(DEFAULT, text, re.DOTALL)``, in linear time (up to ``limit`` matches).

    At each ```` ```bash ````, ``\\s*`` takes the whole whitespace run and backtracks to its
    last newline, where the group starts; the lazy group ends at the next ``\\n`````; if
    there is none, the only other way to match is the run's second-to-last newline with the
    closing fence right at the last one. A failed search for the fence is remembered, so no
    stretch of text is searched twice.
    """
    found: list[Action] = []
    no_close_from = len(text) + 1  # the fence does not occur at or after this position
    pos = 0
    while len(found) < limit:
        start = text.find(opener, pos)
        if start < 0:
            break
        run_start = run_end = start + len(opener)
        while run_end < len(text) and text[run_end] in _SPACE:
            run_end += 1
        last = text.rfind("\n", run_start, run_end)
        match: Action | None = None
        if last >= 0:
            close = -1 if last + 1 >= no_close_from else text.find(_CLOSE, last + 1)
            if close < 0:
                no_close_from = min(no_close_from, last + 1)
                before = text.rfind("\n", run_start, last)
                if before >= 0 and text.startswith("```", last + 1):
                    match = Action(start, last + 4, text[before + 1 : last])
            else:
                match = Action(start, close + 4, text[last + 1 : close])
        if match is None:
            pos = start + 1
            continue
        found.append(match)
        pos = match.end
    return found


_CHILD: Final = r"""
import json, re, sys
job = json.loads(sys.stdin.read())
rx = re.compile(job["pattern"], re.DOTALL)
out = []
for text in job["texts"]:
    spans = []
    for m in rx.finditer(text):
        spans.append([m.start(), m.end(), *(m.span(1) if rx.groups else m.span())])
        if len(spans) > 1:
            break
    out.append(spans)
sys.stdout.write(json.dumps(out))
"""


def _bounded(pattern: str, texts: Sequence[str], path: str | Path) -> list[Action | None]:
    job = json.dumps({"pattern": pattern, "texts": list(texts)})
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=job,
            capture_output=True,
            text=True,
            timeout=SECONDS,
            check=False,
        )
    except OSError as exc:  # no interpreter to start (an embedded Python, say)
        raise FormatError(
            path, f"{_FIELD}: cannot run the file's own pattern in a separate process ({exc})"
        ) from None
    except subprocess.TimeoutExpired:
        raise FormatError(
            path,
            f"{_FIELD}: the file's own pattern did not finish within {SECONDS:g} s "
            "(catastrophic backtracking?); refusing to run it further",
        ) from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["it failed"])[-1]
        raise FormatError(path, f"{_FIELD}: the file's own pattern could not run: {reason}")
    out: list[Action | None] = []
    for text, spans in zip(texts, json.loads(done.stdout), strict=True):
        if len(spans) != 1:
            out.append(None)
            continue
        start, end, g_start, g_end = spans[0]
        out.append(Action(start, end, text[g_start:g_end]))
    return out
