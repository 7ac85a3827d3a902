"""``python -m compaction``: the same as the ``compaction`` command."""

from .cli import main

raise SystemExit(main())
