"""What a layer reports as the run enters and leaves it (the middleware hooks' events and
logs), kept apart from [`compaction.strategy`][] so the base class reads as its rules."""

from __future__ import annotations

import time
from typing import Any

from . import events
from ._log import log
from .engine import Run

__all__ = ["entered", "exited"]


def entered(layer: Any, run: Run, asked: bool) -> tuple[int, int, float]:
    """Report entering the layer; answers what ``_exit`` reports against."""
    position = run.depth
    run.depth += 1
    log.debug(
        "layer.entered",
        strategy=layer.name,
        position=position,
        tokens=run.tokens,
        asked=asked,
        labels=dict(run.labels),
    )
    events.layer_entered.send(
        layer,
        name=layer.name,
        position=position,
        tokens=run.tokens,
        target=run.target,
        asked=asked,
        labels=run.labels,
    )
    return position, run.tokens, time.monotonic()


def exited(
    layer: Any, run: Run, entry: tuple[int, int, float], asked: bool, passed: bool, ok: bool
) -> None:
    position, before, started = entry
    run.depth = position
    seconds = time.monotonic() - started
    log.debug(
        "layer.exited",
        strategy=layer.name,
        position=position,
        before=before,
        after=run.tokens,
        asked=asked,
        passed=passed,
        ok=ok,
        labels=dict(run.labels),
    )
    events.layer_exited.send(
        layer,
        name=layer.name,
        position=position,
        before=before,
        after=run.tokens,
        asked=asked,
        passed=passed,
        seconds=seconds,
        ok=ok,
        labels=run.labels,
    )
