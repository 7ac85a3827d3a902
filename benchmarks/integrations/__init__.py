"""The ``integrations`` suite: the cost of one call in each framework drop-in, before and
after compaction. Imports ``benchmarks.common``.
"""
