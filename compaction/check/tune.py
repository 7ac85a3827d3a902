"""Tuning a trigger and its ladder on a team's own logs: the cheapest settings that keep what
the default keeps.

The default trigger's marks (compact at 70% of the window, down to 40%), the layers' keep
sizes, the minimum saving and the cache-aware policy's marks are reasonable guesses; the best
values depend on the workload (how long tool outputs are, how far apart calls are, how the
prompt cache is billed). [`tune`][compaction.check.tune.tune] searches them with optuna (an
optional extra, ``compaction-ladder[tune]``: a maintained optimiser rather than a hand-written
search) and minimises the priced cost of the tuning logs, under floors measured on the same
logs with the default settings: no request over the window, none invalid, never more calls
without the task, never fewer of the person's identifiers or of the probe facts kept.

The held-out half is judged by the team's committed floors (``[tool.compaction.check]``),
and its figures are shown beside the default's, so a setting that is cheaper only because it
keeps less is visible there.

**The split.** Logs are sorted by path and shuffled with the ``shuffle`` number; every
other one is held out (the odd positions), the rest tuned on, so both halves mix the formats
a directory holds. The settings are chosen on the tuning half only; the report gives the
held-out half's figures for the default and the chosen settings, which is the honest
estimate of what the settings will do on runs they have not seen. Same logs, same
``shuffle`` number, same trials: same result (optuna's TPE sampler started from that number,
trials run one at a time).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..config import Config
from .gate import CheckReport, Thresholds
from .run import LogCheck, check_log

__all__ = ["Trial", "TuneResult", "split", "tune"]


def split(paths: Sequence[str], shuffle: int = 0) -> tuple[list[str], list[str]]:
    """(tuning logs, held-out logs): sorted, shuffled with the number ``shuffle``, every other
    one held out. A single log is tuned on and also reported as held out (there is nothing else)."""
    order = sorted(paths)
    random.Random(shuffle).shuffle(order)
    if len(order) < 2:
        return order, order
    return order[0::2], order[1::2]


@attrs.frozen
class Trial:
    """One candidate: its ``config``, the tuning logs' ``report``, and whether it held every
    floor (``feasible``)."""

    number: int
    config: Config
    report: CheckReport
    feasible: bool

    @property
    def cost(self) -> float:
        return self.report.cost or 0.0


@attrs.frozen
class TuneResult:
    """The search: ``trials`` in order; ``best`` the cheapest feasible one (None if none
    was); ``default_tuning``/``default_held_out`` the default settings' reports and
    ``best_held_out`` the chosen settings' on the held-out logs; ``tuning``/``held_out``
    the split."""

    trials: tuple[Trial, ...]
    best: Trial | None
    default_tuning: CheckReport
    default_held_out: CheckReport
    best_held_out: CheckReport | None
    tuning: tuple[str, ...]
    held_out: tuple[str, ...]

    @property
    def held_out_saving(self) -> float | None:
        """The chosen settings' held-out cost below the default's, as a share (0.12: 12%
        cheaper); None without a feasible trial."""
        if self.best_held_out is None:
            return None
        base, cost = self.default_held_out.cost, self.best_held_out.cost
        if not base or cost is None:
            return None
        return 1 - cost / base


def _ladder(tool_keep: int, window_keep: int) -> dict[str, Any]:
    from ..registry import registry

    use: list[Any] = ["dedupe"] if "dedupe" in registry else []
    use += [
        {"strategy": "tool_results", "keep_steps": tool_keep},
        {"strategy": "sliding_window", "keep_steps": window_keep},
        "summary",
    ]
    return {"use": use, "run": "fit"}


def _candidate(trial: Any, model: str) -> Config:
    compact_at = trial.suggest_float("compact_at", 0.5, 0.95, step=0.05)
    compact_to = trial.suggest_float("compact_to", 0.1, 0.6, step=0.05)
    compact_to = min(compact_to, round(compact_at - 0.1, 2))
    cache_aware = None
    if trial.suggest_categorical("policy", ["fixed", "cache-aware"]) == "cache-aware":
        late = trial.suggest_float("late", 0.5, 0.95, step=0.05)
        early = min(trial.suggest_float("early", 0.3, 0.9, step=0.05), late)
        floor = min(trial.suggest_float("floor", 0.1, 0.5, step=0.05), round(early - 0.05, 2))
        cache_aware = {
            "model": model,
            "late": late,
            "early": early,
            "min_free": trial.suggest_float("min_free", 0.1, 0.6, step=0.05),
            "floor": max(0.05, floor),
        }
    return Config(
        ladder=_ladder(
            trial.suggest_int("tool_results_keep_steps", 1, 4),
            trial.suggest_int("sliding_window_keep_steps", 1, 4),
        ),
        compact_at=compact_at,
        compact_to=max(0.05, compact_to),
        min_saving=trial.suggest_float("min_saving", 0.0, 0.2, step=0.01),
        cache_aware=cache_aware,
        source="tune",
    )


def _floors(default: CheckReport) -> Thresholds:
    """Never worse than the default on the same logs; nothing over the window, nothing
    invalid, whatever the default did."""
    worst_task = max((log.task_lost for log in default.logs), default=0)
    return Thresholds(
        max_over_window=0,
        max_invalid=0,
        max_task_lost=worst_task,
        min_identifiers=default.identifiers_total.share,
        min_facts=default.facts.share,
    )


def _violation(report: CheckReport, floors: Thresholds) -> float:
    """How far ``report`` is from the floors (0 when it holds them all)."""
    over = sum(log.over_window + log.invalid for log in report.logs)
    task = sum(max(0, log.task_lost - floors.max_task_lost) for log in report.logs)
    ids = max(0.0, floors.min_identifiers - report.identifiers_total.share)
    facts = max(0.0, floors.min_facts - report.facts.share)
    return over + task + 100 * (ids + facts)


def _report(
    logs: Sequence[tuple[str, Any]],
    config: Config,
    window: int | float,
    price: Any,
    thresholds: Thresholds,
) -> CheckReport:
    checks: list[LogCheck] = [
        check_log(path, config, window=window, price=price, messages=messages, default_cost=False)
        for path, messages in logs
    ]
    return CheckReport(tuple(checks), thresholds)


def tune(
    logs: Sequence[tuple[str, Any]],
    price: Any,
    *,
    window: int | float = 0.5,
    trials: int = 40,
    shuffle: int = 0,
    thresholds: Thresholds | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TuneResult:
    """Search settings for ``logs`` (pairs of path and messages as read) priced at ``price``;
    ``window`` as [`check_log`][compaction.check.run.check_log] takes it; ``trials`` the
    optuna trial budget; ``thresholds`` the floors the held-out logs are judged by (a team's
    committed ones; the tuning logs are held to the default's own figures besides);
    ``progress(done, total)`` called after each trial."""
    try:
        import optuna
    except ImportError as exc:  # pragma: no cover - the extra is in dev
        raise ImportError(
            "compaction tune needs optuna: pip install 'compaction-ladder[tune]'"
        ) from exc
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    if not logs:
        raise ValueError("tune needs at least one log")
    by_path = dict(logs)
    tuning, held_out = split(list(by_path), shuffle)
    tune_logs = [(p, by_path[p]) for p in tuning]
    held_logs = [(p, by_path[p]) for p in held_out]
    default = Config(source="default")
    default_tuning = _report(tune_logs, default, window, price, Thresholds())
    floors = _floors(default_tuning)
    found: list[Trial] = []

    def objective(trial: Any) -> float:
        config = _candidate(trial, price.model)
        report = _report(tune_logs, config, window, price, floors)
        violation = _violation(report, floors)
        trial.set_constraint("floors", violation)
        found.append(Trial(trial.number, config, report, violation == 0))
        if progress is not None:
            progress(len(found), trials)
        return report.cost or 0.0

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=shuffle)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(objective, n_trials=trials, n_jobs=1)
    feasible = [t for t in found if t.feasible]
    best = min(feasible, key=lambda t: (t.cost, t.number)) if feasible else None
    judged = thresholds or Thresholds()
    default_held = _report(held_logs, default, window, price, judged)
    best_held = _report(held_logs, best.config, window, price, judged) if best is not None else None
    return TuneResult(
        tuple(found), best, default_tuning, default_held, best_held, tuple(tuning), tuple(held_out)
    )


def read_logs(paths: Sequence[str | Path]) -> list[tuple[str, Any]]:
    """(path, messages) for each log, read once ([`compaction.formats.load`][])."""
    from ..formats import load

    return [(str(p), load(p).messages) for p in paths]
