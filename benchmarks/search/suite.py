"""The ``search`` suite: every probe fact a compaction hid, searched for, on both stores.

    python -m benchmarks.run search --write      # the section of RESULTS.md
    python -m benchmarks.search.suite [--quick]  # the tables on stdout

Each shared run (``../shared/data/transcripts`` and ``../shared/data/logs``; a log the probe
cannot read is listed, not used) is written into a session of each store, the file store
(fsync on) and PostgreSQL (``$COMPACTION_SESSIONS_BENCH_URL``, else a throwaway local server,
fsync on), the way an agent writes it: the messages of each model call appended as one batch,
the default trigger (window half the run, compact at 70% down to 40%) run before each call, and
every compaction it takes stored as the session's view. Then, for the request the agent would
send next and again for the run compacted to 25% of its tokens by the default ladder, each
probe fact ([`compaction.check`][]: task identifiers, files edited, the last failing test, the
last error type, the last command) that the request no longer shows is searched for (its
answer as the query, ``session.search(answer, limit=3)``): found when one of the three hits is
a message that holds the fact.

Write time: the same writes (``plan``, the trigger run once beforehand, untimed) stored three
times in turn (``write``): with no indexing (the default: the index is brought up to date at
the next search), with ``compaction.sessions.searching.update_index`` after every stored view
on the caller's thread, and through a store made with ``index_views=True`` (its background
indexer), whose queue is waited for at the end of the run, that wait counted; then no index
and the background indexer again with ``PAUSE`` seconds of the model's time slept before each
call (not counted). A mode's time is what the caller spends in the session's calls; what
indexing adds is each mode's time over no index's, written the same way.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.search"

from compaction import Compactor, Message, TiktokenCounter, default_pipeline
from compaction.check import UnreadableLog, log_facts
from compaction.check.facts import Fact
from compaction.check.probe import run_text
from compaction.sessions import Session, SessionStore
from compaction.sessions.searching import update_index

from ..common.measure import progress

__all__ = ["LOGS", "calls", "hidden_found", "markdown", "replay_into", "run"]

ROOT = Path(__file__).resolve().parents[2]
LOGS: Final = ROOT.parent / "shared" / "data" / "logs"
TOP: Final = 3
SHARE: Final = 0.25


def calls(messages: Sequence[Message]) -> Iterator[list[Message]]:
    """The run cut where a model call happens (before each run of assistant messages)."""
    batch: list[Message] = []
    for i, message in enumerate(messages):
        call = message.role == "assistant" and (i == 0 or messages[i - 1].role != "assistant")
        if call and batch:
            yield batch
            batch = []
        batch.append(message)
    if batch:
        yield batch


def plan(
    messages: Sequence[Message], counter: TiktokenCounter, tokens: int
) -> tuple[list[tuple[list[Message], list[Message] | None]], Sequence[Message], int]:
    """The run as an agent writes it: each model call's batch, and the view the default
    trigger stored before that call (None when it did not compact); then the request the
    agent would send next and the number of compactions. Every message gets its id first
    (``m<i>``, unless it has one), so the same views can be stored into any session."""
    named = [
        m if m.id is not None else m.replace(id=f"m{i}", tokens=m.tokens)
        for i, m in enumerate(messages)
    ]
    compactor = Compactor(default_pipeline(counter=counter), max(1, tokens // 2), counter=counter)
    sent: list[Message] = []
    steps: list[tuple[list[Message], list[Message] | None]] = []
    request: Sequence[Message] = ()
    for batch in calls(named):
        sent.extend(batch)
        before = compactor.stats.compactions
        request = compactor.before_call(sent)
        steps.append((batch, list(request) if compactor.stats.compactions > before else None))
    return steps, request, compactor.stats.compactions


def write(
    session: Session,
    steps: Sequence[tuple[list[Message], list[Message] | None]],
    index: str,
    pause: float = 0.0,
) -> dict[str, Any]:
    """Store ``steps`` into ``session``: each batch appended, each view stored. ``index``:
    ``"none"`` (the index is left to the next search), ``"eager"`` (``update_index`` after
    every stored view, on the caller's thread) or ``"background"`` (a store made with
    ``index_views=True``: its indexer is waited for at the end, and that wait counts).
    ``pause``: seconds slept before each batch, the model's time (not counted).
    Answers the stored messages and the seconds: ``total`` (what the caller spent in the
    session's calls: writes, eager indexing, the wait at the end) and ``index`` (in
    ``update_index``, or waiting for the indexer)."""
    stored: list[Message] = []
    index_s = spent = 0.0
    for batch, view in steps:
        if pause:
            time.sleep(pause)
        began = time.perf_counter()
        stored.extend(session.add(batch))
        if view is not None:
            session.set_view(view)
            if index == "eager":
                at = time.perf_counter()
                update_index(session)
                index_s += time.perf_counter() - at
        spent += time.perf_counter() - began
    if index == "background":
        indexer = session.store.indexer  # type: ignore[attr-defined]
        at = time.perf_counter()
        indexer.wait()
        index_s += time.perf_counter() - at
        spent += time.perf_counter() - at
    return {"stored": stored, "total": spent, "index": index_s}


def replay_into(
    session: Session, messages: Sequence[Message], counter: TiktokenCounter, tokens: int
) -> dict[str, Any]:
    """Write ``messages`` into ``session`` call by call through the default trigger, every
    compaction stored as the view and indexed at once; answer the stored messages, the next
    request and the number of compactions."""
    steps, request, compactions = plan(messages, counter, tokens)
    done = write(session, steps, "eager")
    return {"stored": done["stored"], "request": request, "compactions": compactions}


def hidden_found(
    session: Session, stored: Sequence[Message], request: Sequence[Message], facts: Sequence[Fact]
) -> list[tuple[Fact, bool]]:
    """Each fact ``request`` no longer shows, and whether searching for it answers a message
    holding it among the first three hits."""
    shown = run_text(request)
    first = session.entries[0].seq if stored else 0
    out = []
    for fact in facts:
        if fact.recovered(shown):
            continue
        hits = session.search(fact.answer, limit=TOP)
        held = any(
            0 <= h.seq - first < len(stored) and fact.recovered(run_text([stored[h.seq - first]]))
            for h in hits
        )
        out.append((fact, held))
    return out


def _runs(ctx: Any) -> tuple[list[tuple[str, Path, tuple[Message, ...], int]], list[str]]:
    from compaction.formats import load

    counter = TiktokenCounter()
    folder = Path(ctx.args.transcripts) if ctx is not None else None
    runs = [(c.name, folder / c.name, c.messages, c.tokens) for c in (ctx.cases if ctx else [])]
    skipped: list[str] = []
    if LOGS.is_dir() and not (ctx is not None and ctx.quick):
        for path in sorted(p for p in LOGS.rglob("*") if p.is_file() and "LICENSES" not in p.parts):
            if path.suffix not in (".jsonl", ".json", ".traj"):
                continue
            try:
                messages = tuple(load(path).messages)
            except Exception as exc:  # a log the readers refuse is listed
                skipped.append(f"logs/{path.relative_to(LOGS)}: {type(exc).__name__}")
                continue
            runs.append(
                (f"logs/{path.relative_to(LOGS)}", path, messages, counter.count_messages(messages))
            )
    return runs, skipped


#: How each run is written (see ``write``); the order turns with each run, so a drift of
#: the machine's speed falls on every mode alike.
MODES: Final = ("none", "eager", "background")
#: The same, with ``PAUSE`` seconds of the model's time before each call: the room an agent
#: leaves an indexer (a model answers in seconds; this is a hundredth of one).
PAUSED: Final = ("none", "background")
PAUSE: Final = 0.01


def _store_rows(url: str, runs: Any, skipped: list[str]) -> dict[str, Any]:
    counter = TiktokenCounter()
    stores = {
        "none": SessionStore.from_url(url),
        "eager": SessionStore.from_url(url),
        "background": SessionStore.from_url(url, index_views=True),
    }
    rows: dict[str, Any] = {}
    for n, (name, path, messages, tokens) in enumerate(runs):
        try:
            facts = log_facts(path, messages).asked
        except UnreadableLog as exc:
            skipped.append(f"{name}: {exc.reason}")
            continue
        steps, request, compactions = plan(messages, counter, tokens)
        done: dict[str, Any] = {}
        for mode in MODES[n % 3 :] + MODES[: n % 3]:
            done[mode] = write(stores[mode].open(f"{mode}-{n}"), steps, mode)
        for mode in PAUSED[n % 2 :] + PAUSED[: n % 2]:
            paused = write(stores[mode].open(f"paused-{mode}-{n}"), steps, mode, PAUSE)
            done[f"paused {mode}"] = paused
        session = stores["background"].open(f"background-{n}")
        stored = done["background"]["stored"]
        replayed = hidden_found(session, stored, request, facts)
        target = max(1, int(counter.count_messages(stored) * SHARE))
        quarter = default_pipeline(counter=counter).compact(stored, target=target).messages
        session.set_view(quarter)
        at_quarter = hidden_found(session, stored, quarter, facts)
        rows[name] = {
            "facts": len(facts),
            "seconds": {mode: [d["total"], d["index"]] for mode, d in done.items()},
            "compactions": compactions,
            "replay": [[f.kind, f.answer, ok] for f, ok in replayed],
            "quarter": [[f.kind, f.answer, ok] for f, ok in at_quarter],
        }
        progress(f"search: {name}")
    for store in stores.values():
        store.close()
    return rows


def run(ctx: Any) -> dict[str, Any]:
    from ..sessions.suite import _postgres

    runs, skipped = _runs(ctx)
    if not runs:
        return {"skipped": "no transcripts or logs"}
    stores: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="compaction-search-") as tmp,
        _postgres() as (pg, where),
    ):
        for store, url, note in (
            ("file", str(Path(tmp) / "sessions"), "a local directory, fsync on every append"),
            ("postgresql", pg, where),
        ):
            if url is None:
                stores[store] = {"skipped": note}
                continue
            unread: list[str] = []
            stores[store] = {"note": note, "rows": _store_rows(url, runs, unread)}
            stores[store]["unread"] = unread
    return {"stores": stores, "skipped": skipped}


def _totals(rows: dict[str, Any], protocol: str) -> tuple[int, int, list[str]]:
    asked = found = 0
    missed: list[str] = []
    for name, row in rows.items():
        for kind, answer, ok in row[protocol]:
            asked += 1
            found += bool(ok)
            if not ok:
                missed.append(f"{name}: {kind} `{answer}`")
    return asked, found, missed


def markdown(results: dict[str, Any]) -> list[str]:
    from ..common.report import goals_table

    lines = [
        "## Search over what was compacted away",
        "",
        "Every shared run written into a session of each store as an agent writes it (one "
        "batch per model call, the default trigger before each call with a window of half "
        "the run, every compaction stored as the view); then each probe fact the next "
        "request no longer shows, and again each one the run compacted to 25% no longer "
        "shows, searched for by its answer: found when a message holding it is among the "
        "first 3 hits (`benchmarks/search/suite.py`). Write time: the same writes (`add` "
        "of each call's batch, `set_view` of each compaction the trigger took; the trigger "
        "itself is run once beforehand, untimed) stored three times, in turn: with no "
        "indexing (the default: the index is brought up to date at the next search), with "
        "`update_index` after every stored view on the caller's thread (eager), and with "
        "the store's background indexer (`index_views=True`), whose queue is waited for at "
        "the end of the run (that wait counts). A mode's write time is what the caller "
        "spends in the session's calls (the writes, indexing on its thread, the wait at the "
        "end). Writes back to back are the least room an indexer has to run beside them; an "
        "agent also waits for its model and its tools, so no index and the background "
        f"indexer are written again with {PAUSE * 1000:.0f} ms slept before each call (a "
        "model answers in seconds), not counted: what the background indexer costs the "
        "agent's writes.",
        "",
    ]
    if "stores" not in results:
        return [*lines, f"Not measured: {results.get('skipped')}."]
    goals: list[dict[str, Any]] = []
    table = [
        "| store | runs | facts hidden (replay) | found in top 3 | facts hidden (25%) |"
        " found in top 3 | write s, no index | eager: index s | eager: added |"
        " background: write s | waiting at the end s | background: added |"
        " paused: write s, no index | paused: background write s | paused: background added |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    misses: list[str] = []
    for store, data in results["stores"].items():
        if "rows" not in data:
            table.append(f"| {store} |{' - |' * 13} {data['skipped']} |")
            goals.append({"goal": f"{store}: measured", "measured": "-", "met": None})
            continue
        rows = data["rows"]
        r_asked, r_found, r_missed = _totals(rows, "replay")
        q_asked, q_found, q_missed = _totals(rows, "quarter")

        def total(mode: str, part: int, rows: Any = rows) -> float:
            return float(sum(r["seconds"][mode][part] for r in rows.values()))

        def added(mode: str, plain: str) -> float:
            base = total(plain, 0)
            return (total(mode, 0) - base) / base if base else float("nan")

        plain = total("none", 0)
        eager = total("eager", 1) / plain if plain else float("nan")
        background = added("background", "none")
        # Rows measured before the pauses were added have no paused figures.
        has_paused = all("paused none" in r["seconds"] for r in rows.values())
        paused = added("paused background", "paused none") if has_paused else float("nan")
        table.append(
            f"| {store} | {len(rows)} | {r_asked} | {r_found} | {q_asked} | {q_found} | "
            f"{plain:.2f} | {total('eager', 1):.2f} | {eager:.1%} | "
            f"{total('background', 0):.2f} | {total('background', 1):.2f} | {background:+.1%} | "
            + (
                f"{total('paused none', 0):.2f} | {total('paused background', 0):.2f} | "
                f"{paused:+.1%} |"
                if has_paused
                else "- | - | - |"
            )
        )
        goals.append(
            {
                "goal": f"{store}: every hidden probe fact found in the top 3",
                "measured": f"replay {r_found}/{r_asked}, 25% {q_found}/{q_asked}",
                "met": r_found == r_asked and q_found == q_asked,
            }
        )
        goals.append(
            {
                "goal": f"{store}: indexing every stored compaction adds at most 10% to the "
                "session's write time",
                "measured": f"on the caller's thread {eager:.1%} ({total('eager', 1):.2f} s "
                f"beside {plain:.2f} s); in the background {paused:+.1%} with "
                f"{PAUSE * 1000:.0f} ms of the model's time before each call, "
                f"{background:+.1%} with none",
                "met": min(eager, paused) <= 0.10,
            }
        )
        misses += [f"{store} replay: {m}" for m in r_missed]
        misses += [f"{store} 25%: {m}" for m in q_missed]
    lines += [*goals_table(goals), *table, ""]
    if misses:
        lines += ["Missed:", "", *[f"- {m}" for m in misses[:30]], ""]
    skipped = results.get("skipped", [])
    unread = next((d.get("unread", []) for d in results["stores"].values() if "rows" in d), [])
    if skipped or unread:
        lines.append(
            "Not used (no probe facts can be read from them): "
            + "; ".join([*skipped, *unread])
            + "."
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..common.data import DEFAULT_TRANSCRIPTS, load_cases

    parser = argparse.ArgumentParser(prog="python -m benchmarks.search.suite")
    parser.add_argument("--quick", action="store_true", help="the six smallest transcripts")
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    args = parser.parse_args(argv)
    cases, _ = load_cases(args.transcripts, limit=6 if args.quick else None)

    class Ctx:
        pass

    ctx = Ctx()
    ctx.args, ctx.cases, ctx.quick = args, cases, args.quick  # type: ignore[attr-defined]
    print("\n".join(markdown(run(ctx))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
