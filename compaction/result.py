"""What a compaction run answers: [`CompactionResult`][] and its per-strategy records."""

from __future__ import annotations

import attrs

from .messages import Message

__all__ = ["Applied", "CompactionResult", "Declined", "Skip"]


@attrs.frozen(slots=True)
class Skip:
    """What a strategy's ``rewrite`` may answer instead of None to decline with its reason
    (``"summary_not_smaller"``, ``"nothing_to_drop"``...): recorded as a
    [`Declined`][compaction.result.Declined] with that reason, logged at debug, listed in
    [`CompactionResult.skipped`][compaction.result.CompactionResult.skipped]. Declining is
    a normal outcome, never a failure."""

    reason: str


@attrs.frozen(slots=True)
class Applied:
    """One accepted rewrite: ``strategy`` took the conversation from ``before`` to ``after``."""

    strategy: str
    before: int
    after: int
    seconds: float

    @property
    def saved(self) -> int:
        """Tokens this rewrite saved."""
        return self.before - self.after


@attrs.frozen(slots=True)
class Declined:
    """A strategy that was asked and gave nothing that was taken, and why.

    ``reason``: ``"declined"`` (it answered None), its own reason (it answered a
    [`Skip`][compaction.result.Skip]: ``"summary_not_smaller"``, ``"breaker_open"``...),
    ``"did_not_shrink"`` (its answer was not smaller), ``"fewer_statements"`` (its answer
    fit, but the layers below found one that fits and shows more of the person's
    statements), ``"invalid"`` (its answer would be rejected by a provider: a bug, refused),
    or ``"raised"`` (``error`` holds the exception).
    """

    strategy: str
    reason: str
    tokens: int
    seconds: float
    error: BaseException | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class CompactionResult:
    """The outcome of one run.

    ``messages`` is the conversation to send (the input itself, unchanged, when nothing was
    taken). ``before``/``after`` are token counts by the run's counter; ``target`` where the
    run aimed; ``limit`` the hard limit the request must fit (the target unless the caller gave
    a bigger one: a window), which protected content is never cut below.
    """

    messages: tuple[Message, ...]
    before: int
    after: int
    target: int
    applied: tuple[Applied, ...] = ()
    declined: tuple[Declined, ...] = ()
    seconds: float = 0.0
    limit: int | None = None

    @property
    def changed(self) -> bool:
        """True when at least one rewrite was taken."""
        return bool(self.applied)

    @property
    def fits(self) -> bool:
        """True when the result is within the target."""
        return self.after <= self.target

    @property
    def within_limit(self) -> bool:
        """True when the result is within the hard limit (the target when none was given)."""
        return self.after <= (self.target if self.limit is None else self.limit)

    @property
    def saved(self) -> int:
        """Tokens saved in total."""
        return self.before - self.after

    @property
    def budget_use(self) -> float:
        """How much of the target the result takes (``after / target``; 0.0 for a target of
        0). A compaction that started over target aims to end near 1.0: what it leaves unused
        is room it gave up without need."""
        return self.after / self.target if self.target > 0 else 0.0

    @property
    def skipped(self) -> tuple[Declined, ...]:
        """The layers that were asked and declined, with their reasons (a summary not smaller,
        nothing to drop): normal outcomes, logged at debug, never failures."""
        return tuple(d for d in self.declined if d.reason not in ("raised", "invalid"))

    @property
    def failures(self) -> tuple[Declined, ...]:
        """The strategies that raised (the conversation was kept as the last good state)."""
        return tuple(d for d in self.declined if d.reason == "raised")
