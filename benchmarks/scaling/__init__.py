"""The ``scaling`` suite: time per message over 1k-100k synthetic messages with bootstrap
intervals (fit), and peak memory in a process of its own (memory). Imports ``benchmarks.common``.
"""
