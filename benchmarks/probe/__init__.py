"""The ``probe`` suite: facts of every real run, read from the raw logs, looked up after
compaction and replay. Imports ``benchmarks.common``.
"""
