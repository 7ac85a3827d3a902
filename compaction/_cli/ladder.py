"""Counters and ladders from command-line options."""

from __future__ import annotations

from typing import Any

from .errors import CliError

__all__ = ["DEFAULT_LADDER", "build_counter", "build_ladder", "counter_label"]

#: The free layers first, then the offline extractive summary, then the last resort that cuts
#: protected messages so that every request fits whenever the system prompt does (a rejected request
#: ends the run; a cut, marked and recallable, does not).
DEFAULT_LADDER = ("dedupe", "tool_results", "sliding_window", "summary", "fit")

#: A ladder file is a few lines; anything bigger is not one.


def build_counter(kind: str, encoding: str | None) -> Any:
    """The counter ``--counter``/``--encoding`` ask for."""
    from ..tokens import ApproximateCounter, TiktokenCounter

    if kind == "approx":
        if encoding:
            raise CliError("--encoding only applies to --counter tiktoken")
        return ApproximateCounter()
    return TiktokenCounter(encoding or None)


def counter_label(counter: Any) -> str:
    """How a counter is named in reports: ``tiktoken (cl100k_base)`` or ``approx``."""
    encoding = getattr(counter, "encoding_name", None)
    return f"{counter.name} ({encoding})" if encoding else str(counter.name)


def parse_keys(text: str) -> list[str]:
    keys = [k.strip() for k in text.split(",")]
    if not text.strip() or any(not k for k in keys):
        raise CliError(f"--ladder: expected strategy keys separated by commas, got {text!r}")
    return keys


def build_ladder(ladder: str | None, config: str | None, counter: Any) -> Any:
    """The pipeline to run: ``--config`` TOML, ``--ladder`` keys, or the default ladder.

    With ``--ladder a,b,c`` every key is a layer in that order and the last is the terminal,
    so ``--ladder tool_results`` alone is a valid one-layer ladder.
    """
    from ..config import load_config
    from ..pipeline import CompactionPipeline
    from ..registry import registry

    if config:
        # A ladder file, or a config file with a [ladder] (or none: the default ladder), read
        # as a regular file of bounded size (load_config reads through registry.read_toml).
        pipeline = load_config(config).pipeline(counter)
        if not pipeline.strategies:
            raise CliError(f"{config}: the ladder has no strategies")
        return pipeline
    keys = parse_keys(ladder) if ladder else list(DEFAULT_LADDER)
    known = registry.keys()
    for key in keys:
        if key not in known:
            raise CliError(f"unknown strategy {key!r}; registered: {', '.join(known)}")
    pipeline = CompactionPipeline(counter=counter)
    for key in keys[:-1]:
        pipeline.use(key)
    pipeline.run(keys[-1])
    return pipeline


def ladder_names(pipeline: Any) -> list[str]:
    return [s.name for s in pipeline.strategies]


_CACHE: dict[tuple[Any, ...], Any] = {}


def cached(kind: str, *options: Any) -> Any:
    """The counter (``kind="counter"``: kind, encoding) or ladder (``"ladder"``: ladder,
    config, counter kind, encoding) for these options, built once per process: a worker of
    ``-j N`` builds its own, then reuses it for every file it is given."""
    key = (kind, *options)
    if key not in _CACHE:
        if kind == "counter":
            _CACHE[key] = build_counter(*options)
        else:
            ladder, config, counter_kind, encoding = options
            _CACHE[key] = build_ladder(ladder, config, cached("counter", counter_kind, encoding))
    return _CACHE[key]
