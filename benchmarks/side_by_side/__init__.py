"""The ``peers`` suite: our ladder's speed next to LangChain's ``trim_messages`` and
``ClearToolUsesEdit`` on the same inputs. Imports ``benchmarks.common``.
"""
