"""``compaction formats``: every reader, in detection order; with files, what each one is.

With files, each is matched the way every command matches it, and the answer names the
format taken and every format considered, so a file read as the wrong thing (or as nothing)
shows why.
"""

from __future__ import annotations

import sys
from typing import Any

from .errors import EXIT_BAD_INPUT, EXIT_OK
from .render import Table, dump_json, render, say

__all__ = ["run"]


def _listing() -> list[dict[str, Any]]:
    from ..formats.registry import readers

    return [
        {
            "name": r.name,
            "title": r.title,
            "shape": r.shape,
            "kind": "log" if r.log else "request",
            "output": r.output,
            "priority": r.priority,
        }
        for r in readers()
    ]


def _detect(path: str) -> dict[str, Any]:
    from pathlib import Path

    from .._reading import InputFileError
    from ..formats import FormatError
    from ..formats.detect import unreadable
    from ..formats.registry import considered, detect
    from .errors import describe
    from .inputs import parse

    # Opened as every command opens its input: a regular file, never through a symlink (a
    # FIFO would block the command, a link would show what some other file holds).
    try:
        doc = parse(Path(path))
    except FormatError as exc:
        return {"file": path, "format": None, "considered": [], "error": str(exc)}
    except InputFileError as exc:
        return {"file": path, "format": None, "considered": [], "error": describe(exc)}
    except OSError as exc:
        error = str(unreadable(path, exc))
        return {"file": path, "format": None, "considered": [], "error": error}
    tried = considered(doc, path)
    chosen = next((name for name, yes in tried if yes), None)
    out: dict[str, Any] = {"file": path, "format": chosen, "considered": [n for n, _ in tried]}
    if chosen is None:
        try:
            detect(doc, path)
        except FormatError as exc:
            out["error"] = str(exc)
    return out


def run(args: Any) -> int:
    if not args.files:
        listing = _listing()
        if args.json:
            dump_json(listing)
            return EXIT_OK
        table = Table(["format", "kind", "written as", "what it is"])
        for r in listing:
            table.add(r["name"], r["kind"], r["output"], r["title"])
        render(table)
        return EXIT_OK
    found = [_detect(f) for f in args.files]
    if args.json:
        dump_json(found if len(found) > 1 else found[0])
    else:
        for f in found:
            if f["format"] is not None:
                tried = ", ".join(f["considered"])
                say(f"{f['file']}: {f['format']} (considered, in order: {tried})", sys.stdout)
            else:
                say(f"error: {f.get('error')}", sys.stdout)
    return EXIT_BAD_INPUT if any(f["format"] is None for f in found) else EXIT_OK
