"""Summary's round planning: which stretch of the conversation the next round gives up.

Kept apart from [`compaction.strategies.summary`][] because planning never calls the
summariser: it reads the conversation's structure (turns, task, protected messages) and the
token counts, and answers the shortest stretch whose summary would reach target. The strategy
mixes ``_RoundPlanner`` in; it is not a strategy of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs

from ..memory.note import choose as _choose
from ..memory.transcript import Group, Transcript, parse
from ..messages import Message
from ..tokens import TokenCounter
from ._summary_said import said as _said
from ._summary_said import said_sized as _said_sized
from ._summary_said import said_words as _said_words

#: The region of a round that writes one note's or summary's ledger again, in less room.
LEDGER_REGION = "ledger"
_Carried = tuple[list[int], "list[int] | None"]  # counts and statements, message by message
#: Tokens a summary costs whatever it summarises (its header and section titles).
_SUMMARY_OVERHEAD = 32


@attrs.frozen
class _Round:
    """One planned replacement: ``messages[start:end]`` becomes one summary."""

    region: str
    start: int
    end: int
    messages: tuple[Message, ...]
    #: Where the run aims: what the summary may take is what the rest leaves of it.
    target: int = 0
    #: What ``messages`` count by ``counted_by`` when the planner summed them (-1: not known),
    #: each one's count, and how many of the person's statements each carries (when read).
    total: int = attrs.field(default=-1, eq=False, repr=False)
    counted_by: object = attrs.field(default=None, eq=False, repr=False)
    counts: Sequence[int] | None = attrs.field(default=None, eq=False, repr=False)
    stated: Sequence[int] | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def replaced(self) -> tuple[Message, ...]:
        return self.messages[self.start : self.end]

    def room(
        self, counter: TokenCounter, replaced: int, expected: int, total: int | None = None
    ) -> int:
        """What the summary may count: what the target leaves beside the messages that stay
        (so the round ends at target, its budget used), or, when that leaves less than a
        summary's bare frame (this round alone cannot reach target: later rounds combine),
        the expected size; never as much as what it replaces (``replaced``). ``total``: the
        count of ``messages``, when the caller has it."""
        if total is None:
            total = self.total
            if total < 0 or self.counted_by is not counter:
                total = counter.count_messages(self.messages)
        aim = self.target - (total - replaced)
        if self.region == LEDGER_REGION:  # written again only to fit: never past the target
            return min(aim, replaced - 1)
        if aim < min(expected, 2 * _SUMMARY_OVERHEAD):
            aim = expected
        return min(aim, replaced - 1)

    def apply(self, summary: Message) -> tuple[Message, ...]:
        return (*self.messages[: self.start], summary, *self.messages[self.end :])

    def carried(self, summary: Message, counter: TokenCounter) -> _Carried | None:
        """What each message of ``apply(summary)`` counts and states, from what the plan read."""
        if self.counts is None or self.counted_by is not counter:
            return None
        a, b, counts, stated = self.start, self.end, self.counts, self.stated
        return (
            [*counts[:a], counter.count(summary), *counts[b:]],
            None if stated is None else [*stated[:a], len(_said(summary)), *stated[b:]],
        )


class _RoundPlanner:
    """The planning half of [`Summary`][compaction.strategies.summary.Summary] (a mixin)."""

    # Set by Summary.__init__ (validated there); declared here for the type checker.
    keep_steps: int
    summary_tokens: int
    min_tokens: int

    def _expected(self, tokens: int) -> int:
        return min(self.summary_tokens, tokens // 4) + _SUMMARY_OVERHEAD

    def _shortest(
        self, runs: Sequence[Sequence[Group]], counts: Sequence[int], over: int, least: int
    ) -> int:
        """How many of ``runs`` (oldest first) to give up: the fewest (at least ``least``)
        whose replacement by a summary of the expected size saves ``over`` tokens; all of
        them when none would."""
        total = 0
        for n, run in enumerate(runs, 1):
            total += sum(counts[run[0].start : run[-1].end])
            if n >= least and total >= self.min_tokens and total - self._expected(total) >= over:
                return n
        return len(runs)

    def _plan(
        self,
        messages: tuple[Message, ...],
        *,
        target: int,
        counter: TokenCounter,
        carried: _Carried | None = None,
    ) -> _Round | None:
        """The next round: which messages one summary would replace, or None (nothing may be
        given up, or already under target).

        The person's newest words are protected (their share of the target) like everywhere
        else; the round is planned without them when they split the history into stretches
        none of which is worth a call (the rounds would stop over target), or when the
        summary of the longer stretch would show more of the person's statements (theirs
        and the older ones its ledger writes verbatim, within the room the target leaves):
        their statements then ride in the summary's ledger, verbatim. So it is, too, when it
        shows as many, its ledger has room for every statement of its stretch, and it reaches
        target in this round where the stretch between the person's words does not: in a
        long session that stretch is one turn, and every turn would become a summary of its
        own (a round each, and the summaries piling up before the steps still verbatim).
        ``carried``: what each message counts and states, when the previous round knows it."""
        counts, stated = carried if carried and len(carried[0]) == len(messages) else (None, None)
        if counts is None:
            counts = [counter.count(m) for m in messages]
        over = sum(counts) - target
        if over <= 0:
            return None
        words = _said_words(parse(messages, counter=counter, target=target))
        total = over + target

        def counted(found: _Round | None) -> _Round | None:
            # the view's total is known here: ``room`` need not sum it again per plan weighed
            return found and attrs.evolve(found, total=total, counted_by=counter, counts=counts)

        plan = counted(self._plan_on(words, messages, counts, over, target, counter))
        if words.words:
            # The same conversation read without the words' share (what ``parse`` without a
            # target gives): when the words protected nothing the task, the newest request and
            # the pinned groups do not, it plans exactly the same, and is not planned again.
            plain = attrs.evolve(words, words=frozenset())
            if plain.protected != words.protected:
                other = counted(self._plan_on(plain, messages, counts, over, target, counter))
                if plan is None:
                    plan = other
                elif other is not None:
                    if stated is None:  # read once for both plans (and the next rounds)
                        stated = [len(_said(m)) for m in messages]
                    theirs, whole = self._shown(other, counts, counter, stated)
                    ours, _ = self._shown(plan, counts, counter, stated)
                    # as many shown, all of its stretch's, and one round where many would go
                    if theirs > ours or (
                        theirs == ours
                        and whole
                        and not self._reaches(plan, counts, over)
                        and self._reaches(other, counts, over)
                    ):
                        plan = other
        return plan if stated is None or plan is None else attrs.evolve(plan, stated=stated)

    def _reaches(self, plan: _Round, counts: Sequence[int], over: int) -> bool:
        """Whether ``plan``'s summary, of the expected size, saves the ``over`` tokens."""
        replaced = sum(counts[plan.start : plan.end])
        return replaced - self._expected(replaced) >= over

    def _shown(
        self, plan: _Round, counts: Sequence[int], counter: TokenCounter, stated: Sequence[int]
    ) -> tuple[int, bool]:
        """About how many of the person's statements the conversation would show after
        ``plan``: those in the messages that stay, and those of the replaced stretch that its
        ledger has room for (each whole, by priority; supersession aside); and whether that
        room holds every statement of the stretch. ``stated``: how many statements each
        message of ``plan.messages`` carries."""
        kept = sum(stated) - sum(stated[plan.start : plan.end])
        said: list[tuple[str, int]] = []
        for message in plan.messages[plan.start : plan.end]:
            said.extend(_said_sized(message, counter))
        replaced = sum(counts[plan.start : plan.end])
        room = plan.room(counter, replaced, self._expected(replaced)) - 2 * _SUMMARY_OVERHEAD
        shown = len(_choose(said, room))
        return kept + shown, shown == len(said)

    def _plan_on(
        self,
        t: Transcript,
        messages: tuple[Message, ...],
        counts: list[int],
        over: int,
        target: int,
        counter: TokenCounter,
    ) -> _Round | None:
        # Without a task anchor everything is history, but the newest steps are still what the
        # model acts on next: they stay, as they would in the current task.
        limit = len(messages)
        if t.anchor is None and t.groups:
            limit = t.groups[self._protected(t.groups)].start
        # History, in pieces: a note on its own, and the raw groups of each turn.
        pieces: list[Sequence[Group]] = []
        protected = {t.groups[i].start for i in t.protected}
        for whole in t.turns():
            unit = tuple(g for g in whole if g.start < limit)
            if not unit:
                continue
            head, rest = (unit[:1], unit[1:]) if unit[0].kind == "note" else ((), unit)
            if head:
                pieces.append(list(head))
            # The task and pinned messages are never summarised: they split a turn, and an
            # empty piece stands between the parts so that no run spans them.
            part: list[Group] = []
            for group in rest:
                if group.start in protected:
                    if part:
                        pieces.append(part)
                    pieces.append([])
                    part = []
                else:
                    part.append(group)
            if part:
                pieces.append(part)
        raw_runs = _raw_runs(pieces)
        raw = self._worth(raw_runs, counts)
        if not raw_runs:
            combine = _note_run(pieces)
        elif not raw and any(p and p[0].kind == "note" for p in pieces):
            # What is left of old turns between summaries is too small to be worth a call of
            # its own: combine it with the summaries around it rather than stop over target.
            combine = _unbroken(pieces)
        else:
            combine = []
        kept = protected

        def tiers() -> Iterator[tuple[str, list[Sequence[Group]], int]]:
            # in order, each read only when the ones before it gave nothing (the current
            # task's pieces are a walk over its steps: in a long task, most of the view)
            yield "history", raw, 1
            yield "history_summaries", combine, 2
            yield "current", _raw_run(self._current_pieces(t)), 1
            # a protected message stands between as an empty piece: no run spans it
            current = [[g] if g.start not in kept else [] for g in t.current]
            yield "current_summaries", _note_run(current), 2

        for region, runs, least in tiers():
            if len(runs) < least:
                continue
            start, end = runs[0][0].start, runs[-1][-1].end
            if sum(counts[start:end]) < self.min_tokens and not (
                region == "history_summaries" and self._free()
            ):
                # too small to be worth a call; but a free summariser's answer that combines
                # a summary with what is left around it costs nothing, and its ledger is what
                # the room is for
                continue
            n = self._shortest(runs, counts, over, least)
            if region == "history" and n < len(runs):
                n = self._fuller(runs, n, messages, counts, target, counter)
            return _Round(region, start, runs[n - 1][-1].end, messages, target)
        # Nothing left to summarise but one note or summary of ours: its ledger is written
        # again in the room the target leaves (no summariser call), rather than cut in its
        # middle by a last resort that does not know which of its lines are the person's.
        notes = [p[0] for p in pieces if p and p[0].kind == "note"]
        notes += [g for g in t.current if g.kind == "note" and g.start not in kept]
        notes = [g for g in notes if _said(messages[g.start])]  # only for the person's words
        if notes:
            lone = max(notes, key=lambda g: sum(counts[g.start : g.end]))
            return _Round(LEDGER_REGION, lone.start, lone.end, messages, target)
        return None

    def _free(self) -> bool:
        """Whether the summariser costs nothing to call (the extractive default)."""
        able = getattr(self, "capabilities", None)
        return able is not None and not able.model_call

    def _fuller(
        self,
        runs: Sequence[Sequence[Group]],
        n: int,
        messages: tuple[Message, ...],
        counts: Sequence[int],
        target: int,
        counter: TokenCounter,
    ) -> int:
        """How many of ``runs`` to give up, at least ``n`` (the fewest that reach target): more
        only where the summary's ledger would then show more of the person's statements than
        the raw messages it replaces held. At a tight budget the ledger may have no room for
        all of them while raw filler turns ("noted, continuing") stay verbatim; giving the
        filler up as well gives its room to the person's words. Never fewer statements than
        the shortest stretch shows, and the shortest among those that show the most."""
        start = runs[0][0].start
        total = sum(counts)
        # the summary's frame: its header and the heading of the person's words
        frame = counter.count(Message("user", f"[Summary of {len(messages)} earlier messages]"))
        frame += counter.count_text("The person said (verbatim, latest values):") + 1
        said: list[tuple[str, int]] = []
        best, best_shows = n, 0
        at = start
        replaced = 0
        for k, run in enumerate(runs, 1):
            end = run[-1].end
            for index in range(at, end):
                said.extend(_said_sized(messages[index], counter))
                replaced += counts[index]
            at = end
            if k < n:
                continue
            plan = _Round("history", start, end, messages, target)
            room = plan.room(counter, replaced, self._expected(replaced), total)
            # what stays shows itself; the stretch shows what its ledger has room for
            shows = len(_choose(said, room - frame)) - len(said)
            if k == n or shows > best_shows:
                best, best_shows = k, shows
        return best

    def _current_pieces(self, t: Transcript) -> list[list[Group]]:
        current = list(t.current)
        steps = [i for i, g in enumerate(current) if g.kind != "note"]
        protected = set(steps[-self.keep_steps :])
        pinned = {t.groups[i].start for i in t.pinned}
        return [
            [g] if g.start not in pinned else []
            for i, g in enumerate(current)
            if i not in protected
        ]

    def _protected(self, groups: Sequence[Group]) -> int:
        """Index of the first of the newest ``keep_steps`` steps of ``groups`` (0 if fewer)."""
        seen = 0
        for index in range(len(groups) - 1, -1, -1):
            if groups[index].kind != "note":
                seen += 1
                if seen == self.keep_steps:
                    return index
        return 0

    def _worth(
        self, runs: Sequence[list[Sequence[Group]]], counts: Sequence[int]
    ) -> list[Sequence[Group]]:
        """The oldest of ``runs`` big enough to be worth a summariser call (else none)."""
        for run in runs:
            if sum(counts[run[0][0].start : run[-1][-1].end]) >= self.min_tokens:
                return run
        return []


def _raw_run(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest contiguous run of pieces that are not notes."""
    out: list[Sequence[Group]] = []
    for piece in pieces:
        if not piece:  # a protected message: no run spans it
            if out:
                break
            continue
        raw = piece[0].kind != "note"
        if raw:
            out.append(piece)
        elif out:
            break
    return out


def _unbroken(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest run of two pieces or more that no protected message breaks (else the oldest
    run): the person's protected words may stand between summaries, and a lone summary before
    one must not stop the rounds."""
    runs: list[list[Sequence[Group]]] = [[]]
    for piece in pieces:
        if piece:
            runs[-1].append(piece)
        elif runs[-1]:
            runs.append([])
    return next((run for run in runs if len(run) >= 2), runs[0])


def _raw_runs(pieces: Sequence[Sequence[Group]]) -> list[list[Sequence[Group]]]:
    """Every contiguous run of pieces that are not notes, oldest first."""
    out: list[list[Sequence[Group]]] = []
    run: list[Sequence[Group]] = []
    for piece in pieces:
        if not piece:  # a protected message: no run spans it
            if run:
                out.append(run)
                run = []
            continue
        if piece[0].kind != "note":
            run.append(piece)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return out


def _note_run(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest contiguous run of notes, when it has two or more (else none)."""
    out: list[Sequence[Group]] = []
    for piece in pieces:
        if piece and piece[0].kind == "note":
            out.append(piece)
        elif len(out) >= 2:
            break
        else:
            out = []
    return out if len(out) >= 2 else []
