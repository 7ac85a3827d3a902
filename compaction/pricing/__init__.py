"""What compaction costs and saves in money, read from results and recorded usage.

- [`prices`][compaction.pricing.prices]: the dated, sourced price table (data, replaceable);
- [`cost`][compaction.pricing.cost]: a provider's prompt cache followed call by call;
- [`earnings`][compaction.pricing.earnings]: what each compaction of a priced replay earned;
- [`usage`][compaction.pricing.usage] and [`recorded`][compaction.pricing.recorded]: what a provider
  reported, from any usage shape, and what a log recorded per call;
- [`bill_check`][compaction.pricing.bill_check]: the cost model checked against real bills;
- [`cache_policy`][compaction.pricing.cache_policy]: a trigger that compacts when it pays.

Pricing reads results; the ladder never imports it. It may import the core (messages, tokens,
the trigger it prices) and nothing from strategies, formats or integrations.
"""
