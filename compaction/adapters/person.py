"""Who wrote a user-role message: the person, or a tool, a page, a harness speaking in their role.

What a compaction keeps as "the person said" (their rules, limits and facts, verbatim, latest
value winning) must be the person's own words: a fetched page that says "the budget cap is
$50,000" must never replace the $500 the person set. Providers carry more than the person in
the user role (pydantic-ai sends a tool's extra content as a user prompt, agent harnesses send
command output and their own format errors as user messages), so who wrote a message is
decided here, at the boundary, from the framework's own structure where it has one, and
otherwise by recognising what harnesses write, as the file readers do. A message that is not
the person's is marked synthetic (``meta["synthetic"]``): it still reaches the model as it
came, but it is never the task, never feeds the ledger of the person's words, and so never
supersedes their values.

A caller who knows better passes ``is_person``: it is asked about every user-role message the
rules above left to the person (it sees the neutral [`Message`][compaction.messages.Message],
the framework's original under its adapter's ``meta`` key) and answers False for text the
person did not write. It can only take words away from the person, never give tool text to them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from ..memory.transcript import SYNTHETIC_KEY, is_synthetic
from ..messages import Message

__all__ = [
    "HARNESS_OPENINGS",
    "IsPerson",
    "by_person",
    "harness_meta",
    "is_harness_text",
    "mark_authors",
    "synthetic",
]

#: A caller's predicate: False for a user-role message the person did not write.
IsPerson = Callable[[Message], bool]

#: How the text harnesses write in the user role opens: the agent harnesses' own replies (the
#: literal openings of mini-swe-agent's and SWE-agent's default templates, which the file
#: readers recognise too), Claude Code's reminders and markers, and the usual wrappers of
#: command and tool output an agent sends as a user message (mini-swe-agent's
#: ``<returncode>``, ReAct's ``Observation:``, Hermes-style ``<tool_response>``). A person's
#: message does not open with any of them.
HARNESS_OPENINGS: Final[tuple[str, ...]] = (
    # mini-swe-agent: format error, timeout, command output.
    "Please always provide EXACTLY ONE action in triple backticks",
    "The last command <command>",
    "<returncode>",
    "<output>",
    "<warning>",
    # SWE-agent.
    "Your output was not formatted correctly.",
    "Your output could not be parsed properly.",
    "Your output could not be parsed as a tool call.",
    "Your last output did not use any tool calls!",
    "Your bash command contained syntax errors and was NOT executed.",
    "Interactive operation '",
    "EXECUTION TIMED OUT",
    "Here is a demonstration of how to correctly accomplish this task.",
    "OBSERVATION:",
    # Claude Code.
    "[Request interrupted by user",
    "<task-notification>",
    "<system-reminder>",
    # ReAct loops and chat templates that put tool output in the user turn.
    "Observation:",
    "<tool_response>",
    "<tool_result>",
    "<function_results>",
    "<function_result>",
    "<observation>",
)


def is_harness_text(text: str) -> bool:
    """True when ``text`` opens like something a harness or a tool wrote, not a person.

    Only the opening is read (leading whitespace aside): linear in nothing but the openings.
    """
    return text[:256].lstrip().startswith(HARNESS_OPENINGS)


def harness_meta(role: str, text: str) -> dict[str, bool]:
    """``{"synthetic": True}`` for a user-role ``text`` a harness or a tool wrote, else ``{}``."""
    return {SYNTHETIC_KEY: True} if role == "user" and is_harness_text(text) else {}


def by_person(message: Message, is_person: IsPerson | None = None) -> bool:
    """True when ``message`` is a user message the person wrote, by every rule here."""
    if message.role != "user" or is_synthetic(message):
        return False
    if is_harness_text(message.content):
        return False
    return is_person is None or bool(is_person(message))


def synthetic(message: Message) -> Message:
    """``message`` marked as not the person's (the same object when it already is)."""
    if is_synthetic(message):
        return message
    return message.replace(meta={**message.meta, SYNTHETIC_KEY: True})


def mark_authors(
    messages: Iterable[Message], is_person: IsPerson | None = None
) -> tuple[Message, ...]:
    """``messages`` with every user message the person did not write marked synthetic.

    Messages of other roles, and user messages already marked, come back as they are (the
    same objects), so a conversion that marks nothing costs nothing downstream.
    """
    return tuple(
        synthetic(m) if m.role == "user" and not by_person(m, is_person) else m for m in messages
    )
