"""The ``frameworks`` suite: our LangChain middleware beside ``SummarizationMiddleware`` and
``ClearToolUsesEdit``, replayed over the real transcripts. Imports ``benchmarks.common``.
"""
