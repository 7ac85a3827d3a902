"""The built-in strategies, one module each.

Nothing is imported here on purpose: each strategy module stands alone (strategies never
import each other), and ``compaction`` and the registry load a strategy only when it is used.
Import a strategy from its module (``compaction.strategies.tool_results``) or from
``compaction`` itself (``compaction.ToolResults``).
"""
