"""The floors a checked run is held to, and the verdict over many logs.

A team commits its floors beside its code, in ``pyproject.toml``::

    [tool.compaction.check]
    max_over_window = 0       # requests over the window (a provider refuses them)
    max_invalid = 0           # requests a provider refuses for their shape
    max_task_lost = 0         # calls whose request lost the original task
    min_identifiers = 0.9     # the person's identifiers still shown after their message went
    min_facts = 0.95          # the probe facts still recoverable
    max_cost_vs_default = 1.0 # priced cost against the default trigger (needs a price)

or in the ``[check]`` table of a config file (which wins, key by key). Counts are judged per
log (one over-window request in one log is one too many); shares are pooled over every log
(a log with two facts would otherwise swing the verdict by half); cost is judged on the
total. Unknown keys are errors: a misspelt floor must not leave the default in force.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from ..registry import ConfigError, read_toml
from .identifiers import KINDS
from .run import Kept, LogCheck

__all__ = [
    "CheckReport",
    "Thresholds",
    "assert_check",
    "check_logs",
    "find_pyproject_thresholds",
    "thresholds_from",
]

_COUNTS: Final = ("max_over_window", "max_invalid", "max_task_lost")
_SHARES: Final = ("min_identifiers", "min_facts")
_RATIOS: Final = ("max_cost_vs_default", "max_cost_vs_uncompacted")


@attrs.frozen
class Thresholds:
    """The floors (see the module docstring); a ratio of None is not judged."""

    max_over_window: int = 0
    max_invalid: int = 0
    max_task_lost: int = 0
    min_identifiers: float = 0.9
    min_facts: float = 0.9
    max_cost_vs_default: float | None = None
    max_cost_vs_uncompacted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


def thresholds_from(
    table: Mapping[str, Any], source: str, base: Thresholds | None = None
) -> Thresholds:
    """``base`` (default: the defaults) with the floors ``table`` sets; [`ConfigError`][
    compaction.registry.ConfigError] names ``source`` and the key of the first problem."""
    known = set(_COUNTS) | set(_SHARES) | set(_RATIOS)
    bad = sorted(set(table) - known)
    if bad:
        raise ConfigError(f"{source}: unknown check key(s) {bad}; expected some of {sorted(known)}")
    changes: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{source}: {key}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{where}: expected a finite number >= 0, got {value!r}")
        if key in _COUNTS:
            if not isinstance(value, int):
                raise ConfigError(f"{where}: expected a whole number of requests, got {value!r}")
        elif key in _SHARES and value > 1:
            raise ConfigError(f"{where}: expected a share in [0, 1], got {value!r}")
        changes[key] = value
    return attrs.evolve(base or Thresholds(), **changes)


def find_pyproject_thresholds(start: Path | None = None) -> tuple[Thresholds, str | None]:
    """The floors of the nearest ``pyproject.toml`` (from ``start``, default the working
    directory, upwards) that has a ``[tool.compaction.check]`` table, and its path; the
    defaults and None when there is none."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            data = read_toml(candidate)
            table = data.get("tool", {}).get("compaction", {}).get("check")
            if table is None:
                continue
            if not isinstance(table, Mapping):
                raise ConfigError(f"{candidate}: [tool.compaction.check] must be a table")
            return thresholds_from(table, f"{candidate} [tool.compaction.check]"), str(candidate)
    return Thresholds(), None


def _sum_cost(values: Sequence[float | None]) -> float | None:
    """The sum over the logs that were priced (None when none was: a log whose usage cannot
    be priced is left out of the money, and its ``price_note`` says why)."""
    priced = [v for v in values if v is not None]
    return sum(priced) if priced else None


@attrs.frozen
class CheckReport:
    """Many logs' checks and the verdict: ``failures`` lists every floor not held, each a
    sentence naming the log (or "all logs") and the figure; ``unread`` the logs that could not
    be read, with why (an unread log fails the check: a gate that skips what it cannot read
    passes anything)."""

    logs: tuple[LogCheck, ...]
    thresholds: Thresholds
    unread: tuple[tuple[str, str], ...] = ()

    @property
    def identifiers(self) -> dict[str, Kept]:
        out = {kind: Kept() for kind in KINDS}
        for log in self.logs:
            for kind, kept in log.identifiers.items():
                out[kind] = out[kind] + kept
        return out

    @property
    def identifiers_total(self) -> Kept:
        return Kept.total(self.identifiers.values())

    @property
    def facts(self) -> Kept:
        return Kept.total(log.facts for log in self.logs)

    @property
    def cost(self) -> float | None:
        return _sum_cost([log.cost for log in self.logs]) if self.logs else None

    @property
    def default(self) -> float | None:
        return _sum_cost([log.default for log in self.logs]) if self.logs else None

    @property
    def uncompacted(self) -> float | None:
        return _sum_cost([log.uncompacted for log in self.logs]) if self.logs else None

    @property
    def findings(self) -> list[tuple[str, str]]:
        """Every floor not held, as (the log's path or \"all logs\", the sentence)."""
        t = self.thresholds
        out = [(path, f"not read: {why}") for path, why in self.unread]
        for log in self.logs:
            for key, value, what in (
                ("max_over_window", log.over_window, "requests over the window"),
                ("max_invalid", log.invalid, "requests a provider would refuse"),
                ("max_task_lost", log.task_lost, "calls without the original task"),
            ):
                if value > getattr(t, key):
                    out.append((log.path, f"{value} {what} (at most {getattr(t, key)})"))
        ids, facts = self.identifiers_total, self.facts
        if ids.share < t.min_identifiers:
            out.append(
                (
                    "all logs",
                    f"the person's identifiers kept {ids.kept}/{ids.asked} = "
                    f"{ids.share:.1%} (at least {t.min_identifiers:.0%})",
                )
            )
        if facts.share < t.min_facts:
            out.append(
                (
                    "all logs",
                    f"probe facts kept {facts.kept}/{facts.asked} = {facts.share:.1%} "
                    f"(at least {t.min_facts:.0%})",
                )
            )
        cost = self.cost
        if cost is not None:
            # Compared over the same logs: those priced.
            priced = [log for log in self.logs if log.cost is not None]
            against_default = _sum_cost([log.default for log in priced])
            against_none = _sum_cost([log.uncompacted for log in priced])
        else:
            against_default = against_none = None
        for key, against, name in (
            ("max_cost_vs_default", against_default, "the default trigger"),
            ("max_cost_vs_uncompacted", against_none, "no compaction"),
        ):
            limit = getattr(t, key)
            if limit is None:
                continue
            if cost is None or against is None:
                out.append(("all logs", f"{key} needs a price (--price MODEL)"))
            elif against > 0 and cost / against > limit:
                out.append(
                    (
                        "all logs",
                        f"cost ${cost:.4f} is {cost / against:.3f}x {name}'s "
                        f"${against:.4f} (at most {limit}x)",
                    )
                )
        return out

    @property
    def failures(self) -> list[str]:
        """Every floor not held, one sentence each, naming the log or "all logs"."""
        return [f"{subject}: {sentence}" for subject, sentence in self.findings]

    @property
    def passed(self) -> bool:
        return bool(self.logs) and not self.failures

    def to_dict(self) -> dict[str, Any]:
        ids = self.identifiers
        return {
            "passed": self.passed,
            "failures": self.failures,
            "thresholds": self.thresholds.to_dict(),
            "totals": {
                "logs": len(self.logs),
                "calls": sum(log.calls for log in self.logs),
                "compactions": sum(log.compactions for log in self.logs),
                "over_window": sum(log.over_window for log in self.logs),
                "invalid": sum(log.invalid for log in self.logs),
                "task_lost": sum(log.task_lost for log in self.logs),
                "identifiers": {k: [v.kept, v.asked] for k, v in ids.items()},
                "identifiers_share": round(self.identifiers_total.share, 4),
                "facts": [self.facts.kept, self.facts.asked],
                "facts_share": round(self.facts.share, 4),
                "cost": _round(self.cost),
                "default": _round(self.default),
                "uncompacted": _round(self.uncompacted),
                "summary_cost": _round(_sum_cost([log.summary_cost for log in self.logs])),
            },
            "logs": [log.to_dict() for log in self.logs],
            "unread": [{"path": p, "reason": r} for p, r in self.unread],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


#: The file names a directory is searched for (the same as the command line's).
LOG_SUFFIXES: Final = (".json", ".jsonl", ".traj")


def _files(paths: Sequence[str | Path]) -> list[Path]:
    """Every log named, a directory searched for log files (sorted, hidden ones left out)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and p.name.endswith(LOG_SUFFIXES) and not p.name.startswith(".")
                )
            )
        else:
            found.append(path)
    return found


def check_logs(
    paths: Sequence[str | Path],
    config: Any = None,
    *,
    thresholds: Thresholds | None = None,
    window: int | float = 0.5,
    price: Any = None,
) -> CheckReport:
    """Check every log of ``paths`` (files, or directories searched for ``*.json``,
    ``*.jsonl`` and ``*.traj``) ([`check_log`][compaction.check.run.check_log]) and
    judge them against ``thresholds`` (default: the nearest pyproject.toml's, then the
    config's ``[check]``). A log that cannot be read is listed in ``unread`` and fails the
    check."""
    from ..config import Config
    from .run import check_log

    config = config or Config()
    if thresholds is None:
        thresholds, _ = find_pyproject_thresholds()
        if config.check:
            thresholds = thresholds_from(config.check, f"{config.source} [check]", thresholds)
    checks: list[LogCheck] = []
    unread: list[tuple[str, str]] = []
    for path in _files(paths):
        try:
            checks.append(check_log(path, config, window=window, price=price))
        except (OSError, ValueError) as exc:  # FormatError and UnreadableLog are ValueErrors
            unread.append((str(path), " ".join(str(exc).split())))
    return CheckReport(tuple(checks), thresholds, tuple(unread))


def assert_check(
    paths: Sequence[str | Path],
    config: Any = None,
    *,
    thresholds: Thresholds | None = None,
    window: int | float = 0.5,
    price: Any = None,
) -> CheckReport:
    """[`check_logs`][compaction.check.gate.check_logs], failing the calling test with every
    floor not held (for a project's own pytest suite); the report when all hold."""
    report = check_logs(paths, config, thresholds=thresholds, window=window, price=price)
    if not report.passed:
        lines = report.failures or ["no log could be read"]
        raise AssertionError("compaction check failed:\n  " + "\n  ".join(lines))
    return report
