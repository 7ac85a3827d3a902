"""The ``live`` suite: each session replayed call by call through the trigger, against the
loop's floor. Imports ``benchmarks.common`` and ``compaction.check``.
"""
