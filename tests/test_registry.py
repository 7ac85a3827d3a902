"""Strategies by key: registration, entry points, ladders from dicts and TOML."""

from __future__ import annotations

import sys
import textwrap

import pytest

from compaction import ApproximateCounter, CompactionPipeline
from compaction.registry import (
    ConfigError,
    Registry,
    UnknownStrategyError,
    ladder_from_config,
    load_ladder,
)
from tests.ladder_support import Declines, ToTarget


class Tunable(ToTarget):
    name = "tunable"

    def __init__(self, keep: int = 1, *, label: str = "x") -> None:
        super().__init__(label)
        if keep < 1:
            raise ValueError("keep must be >= 1")
        self.keep = keep


@pytest.fixture
def reg() -> Registry:
    r = Registry(builtins={}, entry_points=False)
    r.register("to_target", ToTarget)
    r.register("declines", Declines)
    r.register("tunable", Tunable)
    return r


def test_builtin_keys_are_known_without_importing() -> None:
    keys = Registry(entry_points=False).keys()
    assert {"tool_results", "sliding_window", "truncate", "summary"} <= set(keys)


def test_register_and_get(reg) -> None:
    assert reg.get("to_target") is ToTarget
    assert "to_target" in reg
    assert reg.keys() == sorted(reg.keys())


def test_duplicates_rejected_unless_replacing(reg) -> None:
    with pytest.raises(ValueError, match="replace=True"):
        reg.register("to_target", Declines)
    reg.register("to_target", Declines, replace=True)
    assert reg.get("to_target") is Declines


def test_only_strategies_register(reg) -> None:
    with pytest.raises(TypeError, match="Strategy"):
        reg.register("x", dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key"):
        reg.register("", ToTarget)


def test_unknown_key_names_the_valid_ones(reg) -> None:
    with pytest.raises(UnknownStrategyError) as info:
        reg.get("nope")
    message = str(info.value)
    assert "'nope'" in message and "to_target" in message and "tunable" in message


def test_bad_option_names_key_and_options(reg) -> None:
    with pytest.raises(ConfigError) as info:
        reg.create("tunable", kep=2)
    assert "'tunable'" in str(info.value) and "'kep'" in str(info.value)
    assert "keep" in str(info.value)
    with pytest.raises(ConfigError, match="tunable.*keep must be"):
        reg.create("tunable", keep=0)


def test_ladder_from_config(reg) -> None:
    pipeline = ladder_from_config(
        {"use": ["declines", {"strategy": "tunable", "keep": 3}], "run": {"strategy": "to_target"}},
        reg=reg,
    )
    assert [s.name for s in pipeline.strategies] == ["declines", "tunable", "to_target"]
    assert pipeline.strategies[1].keep == 3


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"use": [{"strategy": "nope"}]}, r"use\[0\].*'nope'.*registered"),
        ({"use": [{"keep": 1}]}, r"use\[0\].*missing 'strategy'"),
        ({"use": [{"strategy": "tunable", "bogus": 1}]}, r"use\[0\].*'bogus'"),
        ({"use": "declines"}, "'use' must be a list"),
        ({"layers": []}, "unknown ladder setting"),
        ({"run": 5}, "run: expected a table"),
    ],
)
def test_bad_configs_name_the_problem(reg, config, match) -> None:
    with pytest.raises(ConfigError, match=match):
        ladder_from_config(config, reg=reg)


def test_load_ladder_from_toml(reg, tmp_path) -> None:
    path = tmp_path / "ladder.toml"
    path.write_text(
        textwrap.dedent(
            """
            [[use]]
            strategy = "declines"

            [[use]]
            strategy = "tunable"
            keep = 2

            [run]
            strategy = "to_target"
            """
        )
    )
    pipeline = load_ladder(path, reg=reg)
    assert [s.name for s in pipeline.strategies] == ["declines", "tunable", "to_target"]
    from compaction import Message

    msgs = [Message("user", "x" * 400), Message("user", "y" * 400)]
    result = pipeline.compact(msgs, target=150, counter=ApproximateCounter())
    assert result.fits


def test_load_ladder_errors_name_the_file(reg, tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[use]\nstrategy=")
    with pytest.raises(ConfigError, match="bad.toml.*TOML"):
        load_ladder(bad, reg=reg)
    with pytest.raises(ConfigError, match="missing.toml.*no such file"):
        load_ladder(tmp_path / "missing.toml", reg=reg)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('[[use]]\nstrategy = "zzz"\n')
    with pytest.raises(ConfigError, match=r"unknown.toml.*use\[0\].*'zzz'"):
        load_ladder(unknown, reg=reg)


def test_entry_point_discovery(tmp_path, monkeypatch) -> None:
    # A real installed distribution on sys.path, found through importlib.metadata.
    (tmp_path / "thirdparty_strategy.py").write_text(
        "from tests.ladder_support import ToTarget\n"
        "class Plugged(ToTarget):\n    name = 'plugged'\n"
    )
    dist = tmp_path / "thirdparty_strategy-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: thirdparty-strategy\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[compaction.strategies]\nplugged = thirdparty_strategy:Plugged\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry()
    assert "plugged" in reg
    pipeline = CompactionPipeline().use(reg.create("plugged"))
    assert pipeline.strategies[0].name == "plugged"
    sys.modules.pop("thirdparty_strategy", None)


def test_unknown_key_as_a_bare_string_is_a_config_error(reg) -> None:
    with pytest.raises(ConfigError, match=r"use\[1\].*'zzz'"):
        ladder_from_config({"use": ["declines", "zzz"]}, reg=reg)
