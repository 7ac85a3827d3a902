"""Benchmarks for ``compaction``: cost next to the counting floor, scaling, and the peers.

Run from the repository root with ``python -m benchmarks.run`` (see ``--help``). Nothing here is
part of the library or of the test suite's timing; ``tests/test_benchmarks_smoke.py`` only checks
that the harness still runs end to end on a tiny input.
"""
