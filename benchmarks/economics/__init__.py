"""The ``economics`` suite: a replay's tokens sent, compactions and prompt-cache share.
Imports ``benchmarks.common``.
"""
