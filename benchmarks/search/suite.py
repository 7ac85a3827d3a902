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

Write time is the time spent in ``add`` and ``set_view`` during the replay. Index time is the
time spent bringing the index up to date after every stored compaction
(``compaction.sessions.searching.update_index``): the cost of indexing at every compaction,
which is at least as often as a store indexes on its own (at a search).
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


def replay_into(
    session: Session, messages: Sequence[Message], counter: TiktokenCounter, tokens: int
) -> dict[str, Any]:
    """Write ``messages`` into ``session`` call by call through the default trigger, every
    compaction stored as the view; answer the stored messages, the next request, the write
    and index seconds and the number of compactions."""
    compactor = Compactor(default_pipeline(counter=counter), max(1, tokens // 2), counter=counter)
    stored: list[Message] = []
    request: Sequence[Message] = ()
    write = index = 0.0
    compactions = 0
    for batch in calls(messages):
        began = time.perf_counter()
        stored.extend(session.add(batch))
        write += time.perf_counter() - began
        before = compactor.stats.compactions
        request = compactor.before_call(stored)
        if compactor.stats.compactions > before:
            compactions += 1
            began = time.perf_counter()
            session.set_view(request)
            write += time.perf_counter() - began
            began = time.perf_counter()
            update_index(session)
            index += time.perf_counter() - began
    return {
        "stored": stored,
        "request": request,
        "write": write,
        "index": index,
        "compactions": compactions,
    }


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


def _store_rows(url: str, runs: Any, skipped: list[str]) -> dict[str, Any]:
    counter = TiktokenCounter()
    store = SessionStore.from_url(url)
    rows: dict[str, Any] = {}
    for n, (name, path, messages, tokens) in enumerate(runs):
        try:
            facts = log_facts(path, messages).asked
        except UnreadableLog as exc:
            skipped.append(f"{name}: {exc.reason}")
            continue
        session = store.open(f"run-{n}")
        done = replay_into(session, messages, counter, tokens)
        stored = done["stored"]
        replayed = hidden_found(session, stored, done["request"], facts)
        target = max(1, int(counter.count_messages(stored) * SHARE))
        quarter = default_pipeline(counter=counter).compact(stored, target=target).messages
        session.set_view(quarter)
        at_quarter = hidden_found(session, stored, quarter, facts)
        rows[name] = {
            "facts": len(facts),
            "write": done["write"],
            "index": done["index"],
            "compactions": done["compactions"],
            "replay": [[f.kind, f.answer, ok] for f, ok in replayed],
            "quarter": [[f.kind, f.answer, ok] for f, ok in at_quarter],
        }
        progress(f"search: {name}")
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
        "first 3 hits (`benchmarks/search/suite.py`). Write time: `add` and `set_view`; "
        "index time: bringing the index up to date after every stored compaction.",
        "",
    ]
    if "stores" not in results:
        return [*lines, f"Not measured: {results.get('skipped')}."]
    goals: list[dict[str, Any]] = []
    table = [
        "| store | runs | facts hidden (replay) | found in top 3 | facts hidden (25%) |"
        " found in top 3 | write s | index s | index / write |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    misses: list[str] = []
    for store, data in results["stores"].items():
        if "rows" not in data:
            table.append(f"| {store} | - | - | - | - | - | - | - | {data['skipped']} |")
            goals.append({"goal": f"{store}: measured", "measured": "-", "met": None})
            continue
        rows = data["rows"]
        r_asked, r_found, r_missed = _totals(rows, "replay")
        q_asked, q_found, q_missed = _totals(rows, "quarter")
        write = sum(r["write"] for r in rows.values())
        index = sum(r["index"] for r in rows.values())
        share = index / write if write else float("nan")
        table.append(
            f"| {store} | {len(rows)} | {r_asked} | {r_found} | {q_asked} | {q_found} | "
            f"{write:.2f} | {index:.2f} | {share:.1%} |"
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
                "goal": f"{store}: indexing adds at most 10% to the session's write time",
                "measured": f"{share:.1%} ({index:.2f} s beside {write:.2f} s)",
                "met": share <= 0.10,
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
