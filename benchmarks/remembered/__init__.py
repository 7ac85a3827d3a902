"""The ``remembered`` suite: what the person said, after 5 compactions, on generated sessions
(statements, sessions) judged by ``judge``. Imports ``benchmarks.common``.
"""
