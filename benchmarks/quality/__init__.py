"""The ``quality`` suite: what each ladder keeps (task, fit, identifiers, notes), judged by the
benchmark's own rules (metrics, identifiers). Imports ``benchmarks.common``.
"""
