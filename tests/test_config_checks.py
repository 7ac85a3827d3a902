"""Config values are checked by type at the boundary, and format strings are bounded."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compaction import ConfigError, ToolResults, Truncate, ladder_from_config
from compaction.registry import read_toml


@pytest.mark.parametrize(
    "placeholder",
    [
        "{name:99999999999}",
        "{name:>99999999999}",
        "{name:x^99999999999}",
        "{args:.99999999999}",
        "{call_id:099999999999}",
        "[{name:2000}]",
    ],
)
def test_a_huge_width_in_a_placeholder_is_refused_naming_it(placeholder):
    with pytest.raises(ValueError, match=r"ToolResults placeholder .*width"):
        ToolResults(placeholder=placeholder)


@pytest.mark.parametrize(
    "marker", ["[{cut:99999999999}]", "[{cut:,.99999999999}]", "{cut:099999999999,}"]
)
def test_a_huge_width_in_a_marker_is_refused_naming_it(marker):
    with pytest.raises(ValueError, match=r"Truncate marker .*width"):
        Truncate(max_chars=500, marker=marker)


@pytest.mark.parametrize(
    "placeholder", ["{name.__class__}", "{args[0]}", "{name:{args}}", "{other}", "{0}", "{}"]
)
def test_a_placeholder_may_only_name_its_own_fields(placeholder):
    with pytest.raises(ValueError, match="ToolResults placeholder"):
        ToolResults(placeholder=placeholder)


def test_modest_formats_still_work():
    assert ToolResults(placeholder="[{name:>10} {args!r:.40}]").placeholder
    assert Truncate(max_chars=500, marker="\n[{cut:,} cut, {cut:08d}]\n").marker


@given(st.text(max_size=40))
def test_any_placeholder_is_taken_or_refused_with_a_value_error(text):
    try:
        strategy = ToolResults(placeholder=text)
    except ValueError:
        return
    strategy.placeholder.format(name="n" * 50, args="a" * 50, call_id="c" * 50)


def test_the_config_path_names_the_key_for_a_huge_width():
    config = {"use": [{"strategy": "tool_results", "placeholder": "{name:99999999999}"}]}
    with pytest.raises(ConfigError, match=r"use\[0\].*placeholder.*width"):
        ladder_from_config(config)


@pytest.mark.parametrize("value", ["false", "true", 0, 1, "no", None])
def test_strict_must_be_a_bool(value):
    with pytest.raises(ConfigError, match=r"'strict' must be true or false"):
        ladder_from_config({"strict": value, "use": ["tool_results"]})


def test_strict_false_and_true_are_taken():
    assert ladder_from_config({"strict": False, "use": ["tool_results"]}).strict is False
    assert ladder_from_config({"strict": True, "use": ["tool_results"]}).strict is True


@pytest.mark.parametrize(
    ("entry", "key", "expected"),
    [
        ({"strategy": "truncate", "max_chars": "500"}, "max_chars", "an int"),
        (
            {"strategy": "truncate", "max_chars": 500, "include_anchor": "false"},
            "include_anchor",
            "a bool",
        ),
        (
            {"strategy": "truncate", "max_chars": 500, "roles": ["user", 3]},
            "roles",
            "a list of str",
        ),
        (
            {"strategy": "truncate", "max_chars": 500, "keep": 1},
            "keep",
            "one of 'head', 'tail', 'both'",
        ),
        ({"strategy": "tool_results", "keep_steps": 1.0}, "keep_steps", "an int"),
        (
            {"strategy": "tool_results", "exclude_tools": {"bash": 1}},
            "exclude_tools",
            "a list of str",
        ),
        ({"strategy": "sliding_window", "note": "no"}, "note", "a bool or None"),
        ({"strategy": "sliding_window", "window_size": True}, "window_size", "an int or None"),
        ({"strategy": "summary", "timeout": "30"}, "timeout", "a number or None"),
        ({"strategy": "summary", "max_failures": False}, "max_failures", "an int or None"),
    ],
)
def test_option_values_are_checked_by_type_naming_the_key(entry, key, expected):
    with pytest.raises(ConfigError) as info:
        ladder_from_config({"use": [entry]})
    message = str(info.value)
    assert message.startswith("use[0]: strategy ")
    assert f"option {key!r} must be {expected}" in message


def test_good_values_of_every_type_build(tmp_path):
    path = tmp_path / "ladder.toml"
    path.write_text(
        "strict = true\n"
        '[[use]]\nstrategy = "tool_results"\nexclude_tools = ["read"]\nkeep_steps = 2\n'
        '[[use]]\nstrategy = "truncate"\nmax_chars = 2000\nroles = ["tool"]\nkeep = "both"\n'
        "include_anchor = false\n"
        '[[use]]\nstrategy = "sliding_window"\nnote = true\n'
        '[run]\nstrategy = "summary"\ntimeout = 30\nmax_failures = 2\n'
    )
    pipeline = ladder_from_config(read_toml(path))
    assert pipeline.strict is True
    assert [s.name for s in pipeline.strategies] == [
        "tool_results",
        "truncate",
        "sliding_window",
        "summary",
    ]
    assert pipeline.strategies[-1].timeout == 30.0


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
OPTIONS = {
    "tool_results": ["keep_steps", "min_tokens", "exclude_tools", "placeholder"],
    "sliding_window": ["window_size", "window_mode", "keep_steps", "note"],
    "truncate": ["max_chars", "max_tokens", "roles", "keep", "include_anchor", "marker"],
    "summary": [
        "keep_steps",
        "max_failures",
        "timeout",
        "instructions",
        "summary_tokens",
        "min_tokens",
    ],
}


@given(
    st.sampled_from(sorted(OPTIONS)).flatmap(
        lambda key: st.tuples(
            st.just(key), st.dictionaries(st.sampled_from(OPTIONS[key]), JSONISH, max_size=3)
        )
    ),
    JSONISH,
)
def test_any_config_value_builds_or_is_a_config_error(entry, strict):
    key, options = entry
    if key == "truncate" and "max_chars" not in options and "max_tokens" not in options:
        options["max_chars"] = 500
    for config in ({"use": [{"strategy": key, **options}]}, {"strict": strict, "use": [key]}):
        with contextlib.suppress(ConfigError):  # a clear error naming the key, or a ladder
            ladder_from_config(config)
