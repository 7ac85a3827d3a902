"""What kind of statement a sentence of the person's is: a rule, a fact, a goal, or none.

Read for every sentence the person wrote (a task statement runs to thousands of characters),
so each test is one linear pass, and the cheap ones first: see [`kind_of`][].
"""

from __future__ import annotations

import re
from typing import Final, Literal

from ._values import _unpasted, has_value

__all__ = ["StatementKind", "kind_of"]

StatementKind = Literal["rule", "fact", "goal"]

_RULE_WORDS: Final = (
    r"\b(never|always|must|mustn't|don't|do not|dont|only|no more than|no later than|at most|"
    r"at least|not allowed|forbidden|deadline|due (?:by|on)|by (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|tomorrow|tonight|noon|eod)|prefer\w*|make sure|avoid|"
    r"ensure|no exceptions|under no circumstances)\b"
)
_RULE_WITH_VALUE_WORDS: Final = (
    r"\b(keep|use|should(?:n't)?|need to|has to|have to|limit|cap|budget|required?|rule|"
    r"constraint|policy|max(?:imum)?|min(?:imum)?|under|below|within|up to)\b"
)
_GOAL_WORDS: Final = (
    r"\b(goal|aim|objective|want|wants|plan|milestone|target|done|finished|completed?|"
    r"status|blocked|in progress|next step|priority|todo|ship|launch|release)\b"
)
#: Words that instruct or constrain on their own ("never", "must", "at most", "prefer").
_RULE: Final = re.compile(_RULE_WORDS, re.IGNORECASE)
#: Words that instruct only with a value beside them ("keep it under 200 words", "the cap is
#: $4,700"): alone, "keep going" or "the budget review" is talk, not a rule.
_RULE_WITH_VALUE: Final = re.compile(_RULE_WITH_VALUE_WORDS, re.IGNORECASE)
_GOAL: Final = re.compile(_GOAL_WORDS, re.IGNORECASE)
#: The same words for a sentence in ASCII, searched lower-cased: the patterns are lower-case,
#: and what case-folding matches beyond an ASCII letter's two cases is no ASCII character (the
#: long s, the Kelvin sign), so the answers are the same, found about three times faster.
_ASCII: Final = tuple(re.compile(p) for p in (_RULE_WORDS, _RULE_WITH_VALUE_WORDS, _GOAL_WORDS))
_FILLER: Final = re.compile(
    r"^\W*(ok(?:ay)?|thanks?(?: you)?|thx|great|cool|nice|sure|yes|no|yep|nope|got it|sounds "
    r"good|perfect|interesting|hmm+|lol|right|alright|continue|go on|go ahead|"
    r"(?:let(?:'s| us) )?(?:keep going|carry on|continue|proceed)(?: with (?:the|our|this) "
    r"(?:plan|work))?)\W*$",
    re.IGNORECASE,
)


def kind_of(sentence: str) -> StatementKind | None:
    """``"rule"`` for a sentence that instructs or constrains (on its own, or with a value
    beside words such as "keep" or "limit"), ``"fact"`` for one that carries a value,
    ``"goal"`` for one about a goal or a status, None for filler and talk."""
    if _FILLER.match(sentence):
        return None
    if sentence.isascii():
        text = sentence.lower()
        rule, rule_with_value, goal = _ASCII
    else:
        text = sentence
        rule, rule_with_value, goal = _RULE, _RULE_WITH_VALUE, _GOAL
    if rule.search(text):
        return "rule"
    if has_value(_unpasted(sentence)):
        return "rule" if rule_with_value.search(text) else "fact"
    if goal.search(text):
        return "goal"
    return None
