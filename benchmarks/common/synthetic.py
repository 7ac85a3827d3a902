"""Deterministic synthetic agent conversations of any length, for the scaling benchmark.

The real transcripts stop at a few thousand messages; the scaling goal (10x the messages costs
at most 12x the time) needs 1k, 10k and 100k. The shape mimics a coding agent: a long system
prompt, user turns, and steps made of an assistant message with one tool call (sometimes two or
three in parallel) followed by their results, whose sizes have a long tail (most outputs are a
few lines, a few are whole files). Every message's text is distinct: counts are cached by
message value, so repeated texts would make counting look cheaper than it is.

Generation stays cheap at 100k messages: the text is sliced out of one corpus built once from a
fixed vocabulary, so the cost is a handful of ``random`` calls per message.
"""

from __future__ import annotations

import json
import math
import random

from compaction.messages import Message, ToolCall

__all__ = ["conversation"]

# Words a coding agent's context is made of: prose, code and shell output.
_VOCABULARY = str.split(
    "the a to of and in is for that it on with this be as are by not if or from at an "
    "can will was file line error test function return value class import def self None "
    "True False print path name data list dict str int result config module package "
    "run call args kwargs raise except try assert expected actual output input read write "
    "open close os sys json yaml http request response status code message user model "
    "token context window step tool bash grep sed cat ls cd git diff commit branch main "
    "src tests docs README setup pyproject version install pip python node npm build make "
    "fix bug issue patch change update add remove rename move copy index key item items "
    "for while break continue lambda yield async await = == != < > <= >= + - * / ( ) [ ] "
    "{ } : , . ; -> # // /* */ 0 1 2 3 42 100 404 500 Traceback (most recent call last): "
    "File line in <module> ValueError TypeError KeyError AttributeError passed failed "
    "PASSED FAILED OK collected items warnings summary ===== ----- ... ok"
)

_TOOLS = ("bash", "read_file", "edit_file", "grep", "list_dir", "run_tests")

_CORPUS_WORDS = 400_000  # about 2.3 MB of text; slices of it are the message bodies


def _corpus(rng: random.Random) -> str:
    words = rng.choices(_VOCABULARY, k=_CORPUS_WORDS)
    # Line breaks every dozen words or so: tool output is line-oriented.
    for i in range(12, len(words), 12):
        words[i] = words[i] + "\n"
    return " ".join(words)


class _Text:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.corpus = _corpus(rng)
        self.n = 0

    def take(self, size: int) -> str:
        """``size`` characters of text, unique thanks to a serial number in front."""
        self.n += 1
        corpus = self.corpus
        start = self.rng.randrange(0, len(corpus) - 1)
        body = corpus[start : start + size]
        while len(body) < size:  # wrap around the end of the corpus
            body += corpus[: size - len(body)]
        return f"#{self.n} {body}"


def _output_size(rng: random.Random) -> int:
    # Log-normal: median about 250 characters, a tail reaching whole files (capped at 16 kB).
    return min(16_000, max(20, int(rng.lognormvariate(math.log(250), 1.2))))


def conversation(n_messages: int, *, seed: int = 0) -> tuple[Message, ...]:
    """A valid agent conversation of exactly ``n_messages`` messages (at least 2).

    Same ``n_messages`` and ``seed``, same conversation, on every machine.
    """
    if n_messages < 2:
        raise ValueError(f"n_messages must be at least 2, got {n_messages}")
    rng = random.Random(seed)
    text = _Text(rng)
    out: list[Message] = [Message("system", text.take(2_000))]
    call_serial = 0

    def room() -> int:
        return n_messages - len(out)

    while room() > 0:
        # A user turn, then a run of steps, then usually a closing answer.
        out.append(Message("user", text.take(rng.randint(40, 600))))
        steps = rng.randint(3, 30)
        for _ in range(steps):
            left = room()
            if left < 2:
                break
            width = 1 if rng.random() < 0.85 else rng.randint(2, 3)
            width = min(width, left - 1)
            calls = []
            for _ in range(width):
                call_serial += 1
                tool_name = rng.choice(_TOOLS)
                arguments = json.dumps(
                    {"command": text.take(rng.randint(10, 160))}, ensure_ascii=False
                )
                calls.append(ToolCall(f"call_{call_serial}", tool_name, arguments))
            thought = text.take(rng.randint(0, 240)) if rng.random() < 0.6 else ""
            out.append(Message("assistant", thought, tool_calls=tuple(calls)))
            for call in calls:
                out.append(
                    Message(
                        "tool",
                        text.take(_output_size(rng)),
                        tool_call_id=call.id,
                        name=call.name,
                    )
                )
        if room() > 0:
            out.append(Message("assistant", text.take(rng.randint(60, 900))))
    return tuple(out)
