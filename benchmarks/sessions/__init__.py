"""The ``sessions`` suite: appends per second and load time, file store against PostgreSQL.
Imports ``benchmarks.common``.
"""
