"""What compaction costs and saves in money, read from results and recorded usage.

- :mod:`~compaction.pricing.prices`: the dated, sourced price table (data, replaceable);
- :mod:`~compaction.pricing.cost`: a provider's prompt cache followed call by call;
- :mod:`~compaction.pricing.earnings`: what each compaction of a priced replay earned;
- :mod:`~compaction.pricing.usage` and :mod:`~compaction.pricing.recorded`: what a provider
  reported, from any usage shape, and what a log recorded per call;
- :mod:`~compaction.pricing.bill_check`: the cost model checked against real bills;
- :mod:`~compaction.pricing.cache_policy`: a trigger that compacts when it pays.

Pricing reads results; the ladder never imports it. It may import the core (messages, tokens,
the trigger it prices) and nothing from strategies, formats or integrations.
"""
