"""Which row a model name gets, and prices from genai-prices (the real package, offline).

A name extends a known one only by a date or a provider prefix: ``gpt-5-nano`` is another model
than ``gpt-5`` (a twenty-fifth of its price), never its nearest row. With genai-prices installed
the prices come from it and the caching rule from the shipped table, and every shipped model
gets the same ``Price`` either way.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compaction.pricing.prices import PriceError, default_prices, price_for

SHIPPED = default_prices()

#: OpenAI's list prices (USD per million input / output tokens) for models the shipped table
#: does not carry; each extends a shipped name by a suffix that is not a date.
OTHERS = {
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-pro": (15.0, 120.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}


@pytest.mark.parametrize("model", [*OTHERS, "claude-sonnet-4-5-fast", "gpt-5-mini-x"])
def test_a_name_that_extends_a_row_by_more_than_a_date_is_unknown(model):
    with pytest.raises(PriceError, match=f"no price for model '{model}': unknown model"):
        price_for(model, SHIPPED)


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("openai/gpt-5-mini", "gpt-5-mini"),
        ("openrouter/anthropic/claude-opus-4-6", "claude-opus-4-6"),
        ("gpt-5-mini", "gpt-5-mini"),
    ],
)
def test_a_date_or_a_provider_prefix_extends_a_name(name, row):
    assert price_for(name, SHIPPED).model == row
    assert price_for(name).model == row  # genai-prices (installed for the tests) agrees


@given(suffix=st.text(alphabet="0123456789-abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=12))
def test_no_suffix_but_a_date_finds_a_shipped_row(suffix):
    dated = re.fullmatch(r"\d{8}|\d{4}-\d{2}-\d{2}", suffix) is not None
    for base in SHIPPED:
        name = f"{base}-{suffix}"
        if any(o != base and name.startswith(o) for o in SHIPPED):
            continue  # the name extends a longer row (gpt-5 + "mini-..." is gpt-5-mini's)
        if dated:
            assert price_for(name, SHIPPED).model == base
        else:
            with pytest.raises(PriceError, match="unknown model"):
                price_for(name, SHIPPED)


def test_genai_prices_prices_the_models_the_shipped_table_lacks():
    pytest.importorskip("genai_prices")
    for model, (inp, out) in OTHERS.items():
        price = price_for(model)
        assert (price.model, price.input, price.output) == (model, inp, out)
        assert price.provider == "openai" and price.cache == "automatic"  # the shipped rule
        assert price.source.startswith("genai-prices ")


def test_every_shipped_model_gets_the_same_price_from_either_source():
    pytest.importorskip("genai_prices")
    for model, shipped in SHIPPED.items():
        from_genai = price_for(model)
        assert from_genai.source.startswith("genai-prices"), model
        assert from_genai == shipped, (from_genai, shipped)


def test_a_provider_whose_caching_rule_is_unknown_is_said_so():
    pytest.importorskip("genai_prices")
    with pytest.raises(PriceError, match="how deepseek caches prompts is not in the table"):
        price_for("deepseek-chat")


_PROBE = """
import socket, sys
attempts = []
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "urllib.Request"):
        attempts.append(event)
sys.addaudithook(hook)
{body}
"""


def _probe(body: str) -> str:
    code = _PROBE.format(body=textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_genai_prices_is_imported_lazily_and_never_reaches_the_network():
    pytest.importorskip("genai_prices")
    out = _probe(
        """
        import compaction, compaction.pricing.prices as prices
        print("early", "genai_prices" in sys.modules)
        p = prices.price_for("gpt-5-nano")
        prices.price_for("claude-sonnet-4-5-20250929")
        from genai_prices import update_prices
        print("late", "genai_prices" in sys.modules, p.input, attempts)
        """
    )
    assert out.splitlines() == ["early False", "late True 0.05 []"]


def test_without_genai_prices_the_shipped_table_answers():
    out = _probe(
        """
        sys.modules["genai_prices"] = None  # as if it were not installed
        from compaction.pricing.prices import PriceError, default_prices, price_for
        shipped = default_prices()
        same = all(price_for(m) == shipped[m] and price_for(m).source == shipped[m].source
                   for m in shipped)
        try:
            price_for("gpt-5-nano")
            nano = "priced"
        except PriceError as exc:
            nano = "unknown" if "unknown model" in str(exc) else str(exc)
        print(same, nano, attempts)
        """
    )
    assert out == "True unknown []"
