"""The ``cold`` and ``warm`` suites: the free ladder against one counting pass (the floor), and a
model call that needs no compaction beside one that does. Imports ``benchmarks.common``.
"""
