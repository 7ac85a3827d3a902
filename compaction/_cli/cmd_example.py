"""``compaction example``: the bundled example conversation, for a user with only the wheel.

The docs and ``--help`` compact an example run; from an installed wheel the file lives inside
site-packages, where no one would guess to look. So the command writes a copy where the user
is (``agent_session.json``, or ``-o PATH``, ``-o -`` for stdout), or with ``--path`` names the
installed file. An existing file is never overwritten unless it already holds the example, so
running it twice is harmless and a user's own file is safe.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import EXIT_OK, CliError

__all__ = ["EXAMPLE_NAME", "bundled", "run"]

#: The file name the example is written under by default.
EXAMPLE_NAME = "agent_session.json"


def bundled() -> Path:
    """The installed example's path (a regular file inside the package)."""
    return Path(str(resources.files("compaction") / "examples" / EXAMPLE_NAME))


def run(args: Any) -> int:
    source = bundled()
    if args.path:
        print(source)
        return EXIT_OK
    data = source.read_bytes()
    if args.output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return EXIT_OK
    from .._atomic import write_atomic

    dest = Path(args.output)
    if dest.is_symlink() or (dest.exists() and not dest.is_file()):
        raise CliError(f"{dest}: not a regular file; nothing written")
    if dest.is_file():
        if dest.read_bytes() == data:
            print(dest)
            return EXIT_OK
        raise CliError(f"{dest} exists and is not the example; not overwritten (use -o PATH)")
    write_atomic(dest, data)
    print(dest)
    return EXIT_OK
