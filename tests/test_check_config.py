"""The one config file (``compaction.config``): read, checked, written back, and loaded the
same way by the trigger, the commands and the check."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Compactor, ConfigError
from compaction.check.identifiers import KINDS, identifiers
from compaction.config import config_from_dict, load_config

FULL = """\
[trigger]
window = 20000
compact_at = 0.8
compact_to = 0.3
min_saving = 0.02

[trigger.cache_aware]
model = "claude-sonnet-4-5"
late = 0.8
early = 0.5

[ladder]
use = [{ strategy = "tool_results", keep_steps = 2 }, "sliding_window"]
run = "summary"

[check]
min_facts = 0.95
"""


def test_a_full_config_is_read_and_builds_its_compactor(tmp_path: Path) -> None:
    path = tmp_path / "compaction.toml"
    path.write_text(FULL)
    compactor = Compactor.from_config(path)
    assert (compactor.window, compactor.compact_at, compactor.compact_to) == (20000, 0.8, 0.3)
    assert compactor.min_saving == 0.02
    assert [s.name for s in compactor.pipeline.strategies] == [
        "tool_results",
        "sliding_window",
        "summary",
    ]
    assert compactor.pipeline.strategies[0].keep_steps == 2
    assert type(compactor.policy).__name__ == "CacheAware"
    assert load_config(path).check == {"min_facts": 0.95}
    # The caller's window wins over the file's.
    assert Compactor.from_config(path, 50_000).window == 50_000


def test_written_settings_read_back_equal(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, FULL))
    again = config_from_dict(__import__("tomllib").loads(config.to_toml()), source=config.source)
    assert again == config


def test_a_ladder_only_file_still_reads_and_a_missing_window_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, 'use = ["tool_results"]\nrun = "summary"\n')
    config = load_config(path)
    assert [s.name for s in config.pipeline().strategies] == ["tool_results", "summary"]
    with pytest.raises(ConfigError, match=r"no window.*pass window="):
        Compactor.from_config(path)
    assert Compactor.from_config(path, 1000).window == 1000


def test_no_ladder_means_the_default_ladder(tmp_path: Path) -> None:
    path = _write(tmp_path, "[trigger]\ncompact_at = 0.9\n")
    names = [s.name for s in load_config(path).pipeline().strategies]
    assert names[-1] == "fit" and "summary" in names


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[trigger]\ncompact_att = 0.9\n", "compact_att"),
        ("[trigger]\ncompact_at = 0.3\ncompact_to = 0.4\n", "compact_to"),
        ("[trigger]\ncompact_at = 1.5\n", "compact_at"),
        ("[trigger]\nmin_saving = true\n", "min_saving"),
        ("[trigger]\nwindow = -3\n", "window"),
        ('[trigger.cache_aware]\nmodel = "no-such-model"\n', "model"),
        ('[trigger.cache_aware]\nmodel = "claude-sonnet-4-5"\nlate = 0.2\n', "cache_aware"),
        ('[ladder]\nuse = ["no_such_strategy"]\n', "no_such_strategy"),
        ("[ladders]\nuse = []\n", "ladders"),
        ("[check]\nmin_fact = 0.9\n", None),  # checked by the check, not here
    ],
)
def test_every_bad_key_is_named_with_the_file(tmp_path: Path, text: str, named: str | None) -> None:
    path = _write(tmp_path, text)
    if named is None:
        load_config(path)
        return
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and named in str(caught.value)


def test_check_floors_are_checked_with_their_key(tmp_path: Path) -> None:
    from compaction.check.gate import Thresholds, thresholds_from

    assert thresholds_from({"min_facts": 0.5}, "x").min_facts == 0.5
    assert thresholds_from({}, "x") == Thresholds()
    for bad in ({"min_fact": 0.9}, {"min_facts": 2}, {"max_over_window": 0.5}, {"min_facts": "a"}):
        with pytest.raises(ConfigError, match="x"):
            thresholds_from(bad, "x")


def test_pyproject_floors_are_found_upwards(tmp_path: Path) -> None:
    from compaction.check.gate import find_pyproject_thresholds

    (tmp_path / "pyproject.toml").write_text("[tool.compaction.check]\nmin_identifiers = 0.5\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    found, where = find_pyproject_thresholds(inner)
    assert found.min_identifiers == 0.5 and where == str(tmp_path / "pyproject.toml")


def _write(folder: Path, text: str) -> Path:
    path = folder / "c.toml"
    path.write_text(text)
    return path


# -- the person's identifiers ------------------------------------------------------------


def test_identifiers_by_kind() -> None:
    text = (
        "Ticket INV-7: ship to Acme by 2026-12-05, cap $500, port 8001, 15% margin. Docs at "
        "https://acme.example/docs, mail ann@corp.example, edit src/app/main.py and "
        "config.toml, call `get_user` on UserService, commit 3f9a2c1b. Meet Dec 5, 2026."
    )
    found = identifiers(text)
    assert found["url"] == ["https://acme.example/docs"]
    assert found["email"] == ["ann@corp.example"]
    assert found["path"] == ["src/app/main.py", "config.toml"]
    assert found["date"] == ["2026-12-05", "Dec 5, 2026"]
    assert found["code"] == ["INV-7", "3f9a2c1b"]
    assert found["number"] == ["$500", "8001", "15%"]
    assert found["name"] == ["`get_user`", "UserService"]
    # Plain prose carries none: nothing a model could not guess.
    assert not any(identifiers("Please keep going with the plan, thanks a lot.").values())


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from("aZ09-_./@:$%`, \nhtps"), max_size=300))
def test_every_identifier_is_text_the_person_wrote(text: str) -> None:
    found = identifiers(text)
    assert set(found) == set(KINDS)
    for values in found.values():
        assert len(values) == len(set(values))
        for value in values:
            assert value and value in text
