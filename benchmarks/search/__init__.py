"""The ``search`` suite: what a compaction hid is found again by searching, on both session
stores, and what keeping the index costs beside writing the session. Imports
``benchmarks.common`` and ``benchmarks.sessions`` (its PostgreSQL server).
"""
