"""The ``cost`` suite: US dollars with the prompt cache, per trigger, and the recorded-bill check.
Imports ``benchmarks.common``.
"""
