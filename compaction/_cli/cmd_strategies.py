"""``compaction strategies``: every registered strategy, what it costs and what it does."""

from __future__ import annotations

from typing import Any, cast

import attrs

from .errors import EXIT_OK
from .render import Table, dump_json, render

__all__ = ["describe_strategies", "run"]


def _explain(cls: Any, key: str) -> str:
    # explain() speaks about a configured instance; the defaults are what a ladder built from
    # the key alone would run. A strategy that needs options to be built gets its docstring.
    from ..registry import registry

    try:
        return " ".join(registry.create(key).explain().split())
    except Exception:
        doc = (cls.__doc__ or "").strip().splitlines()
        return doc[0].strip() if doc else ""


def describe_strategies() -> list[dict[str, Any]]:
    """Key, class, capabilities and explanation of every registered strategy."""
    from ..registry import registry

    out: list[dict[str, Any]] = []
    for key in registry:
        try:
            cls = registry.get(key)
        except Exception as exc:  # a broken plugin must not hide the others
            out.append({"key": key, "error": f"{type(exc).__name__}: {exc}"})
            continue
        # As a ladder built from the key alone would run it (Summary's default summariser is
        # offline and deterministic, which the class alone cannot say).
        capabilities: Any
        try:
            capabilities = registry.create(key).capabilities
        except Exception:
            capabilities = getattr(cls, "capabilities", None)
        out.append(
            {
                "key": key,
                "name": getattr(cls, "name", key),
                "class": f"{cls.__module__}.{cls.__qualname__}",
                "capabilities": (
                    attrs.asdict(cast("attrs.AttrsInstance", capabilities))
                    if attrs.has(type(capabilities))
                    else {}
                ),
                "explanation": _explain(cls, key),
            }
        )
    return out


def explain_config(path: str) -> dict[str, Any]:
    """What a config file sets: the trigger's marks and policy, and the ladder's layers in
    order, each explained as configured (the defaults where the file says nothing)."""
    from ..config import load_config

    config = load_config(path)
    pipeline = config.pipeline()
    layers = [
        {"name": s.name, "explanation": " ".join(s.explain().split())} for s in pipeline.strategies
    ]
    trigger = {
        "window": config.window,
        "compact_at": config.compact_at,
        "compact_to": config.compact_to,
        "min_saving": config.min_saving,
        "strict_floor": config.strict_floor,
        "cache_aware": dict(config.cache_aware) if config.cache_aware is not None else None,
    }
    return {
        "config": path,
        "trigger": trigger,
        "ladder": layers,
        "default_ladder": config.ladder is None,
        "check": dict(config.check),
    }


def _print_config(explained: dict[str, Any]) -> None:
    t = explained["trigger"]
    window = f"{t['window']:,} tokens" if t["window"] else "given by the caller (--window)"
    lines = [
        f"{explained['config']}:",
        f"  window: {window}",
        f"  compact when a request reaches {t['compact_at']:.0%} of the window, down to "
        f"{t['compact_to']:.0%}; a compaction must save {t['min_saving']:.0%} of the window",
    ]
    if t["cache_aware"]:
        ca = t["cache_aware"]
        lines.append(
            "  cache-aware: compact early while the prompt cache is cold, late while warm "
            f"({', '.join(f'{k} {v}' for k, v in ca.items())})"
        )
    label = "the default ladder" if explained["default_ladder"] else "ladder"
    lines.append(f"  {label}, cheapest first:")
    for i, layer in enumerate(explained["ladder"], 1):
        lines.append(f"    {i}. {layer['name']}: {layer['explanation']}")
    if explained["check"]:
        floors = ", ".join(f"{k} = {v}" for k, v in explained["check"].items())
        lines.append(f"  check floors: {floors}")
    print("\n".join(lines))


def run(args: Any) -> int:
    if getattr(args, "config", None):
        explained = explain_config(args.config)
        if args.json:
            dump_json(explained)
        else:
            _print_config(explained)
        return EXIT_OK
    strategies = describe_strategies()
    if args.json:
        dump_json(strategies)
        return EXIT_OK
    table = Table(
        ["key", "model call", "lossless", "keeps tool pairs", "deterministic", "what it does"],
        title="registered strategies",
    )
    for s in strategies:
        if "error" in s:
            table.add(s["key"], "", "", "", "", f"cannot load: {s['error']}")
            continue
        caps = s["capabilities"]

        def flag(name: str, caps: dict[str, Any] = caps) -> str:
            return "yes" if caps.get(name) else "no"

        table.add(
            s["key"],
            flag("model_call"),
            flag("lossless"),
            flag("keeps_tool_pairs"),
            flag("deterministic"),
            s["explanation"],
        )
    render(table)
    return EXIT_OK
