"""``compaction session``: the persistent session store from the command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .._atomic import check_destination
from .errors import EXIT_OK, CliError
from .inputs import STDIO, write_atomic, write_stdout
from .render import Table, dump_json, render, say

__all__ = ["run"]


def _store(args: Any) -> Any:
    """The store ``--store`` names (a directory, ``file:///dir`` or ``postgresql://…``), else
    ``$COMPACTION_SESSIONS_URL``, else ``$COMPACTION_SESSIONS_DIR``, else the default."""
    import os

    from ..sessions import URL_ENV_VAR, SessionStore

    url = args.store if args.store is not None else os.environ.get(URL_ENV_VAR) or None
    options: dict[str, Any] = {}
    if url is not None and url.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        # Said at the first retry, so a wrong port or a server that is down is not silence.
        options["on_retry"] = lambda notice: say(f"compaction: {notice}", sys.stderr)
        if getattr(args, "retry_seconds", None) is not None:
            options["retry_seconds"] = args.retry_seconds
    try:
        # "--store ''" is a mistake (an unset variable, say), never a request for the default.
        return SessionStore.from_url(url, **options) if url is not None else SessionStore()
    except (ValueError, TypeError, ImportError) as exc:
        raise CliError(f"--store: {exc}") from None


def _stamp(moment: Any) -> str | None:
    return moment.isoformat(timespec="seconds") if moment is not None else None


def _summary(session: Any) -> dict[str, Any]:
    return {
        "name": session.name,
        "messages": len(session.entries),
        "created": _stamp(session.created),
        "updated": _stamp(session.updated),
        "path": session.location,
    }


def _text(message: Any) -> str:
    text = message.content
    if message.tool_calls:
        calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        text = f"{text} [calls: {calls}]" if text else f"[calls: {calls}]"
    return text


def _list(args: Any, store: Any) -> int:
    sessions = [_summary(store.open(name, create=False)) for name in store.list()]
    if args.json:
        dump_json({"store": str(store.root), "sessions": sessions})
        return EXIT_OK
    if not sessions:
        say(f"no sessions in {store.root}", sys.stdout)
        return EXIT_OK
    table = Table(
        ["name", "messages", "created", "updated"],
        title=f"sessions in {store.root}",
        right=frozenset({"messages"}),
    )
    for s in sessions:
        table.add(s["name"], s["messages"], s["created"] or "", s["updated"] or "")
    render(table)
    return EXIT_OK


def _show(args: Any, store: Any) -> int:
    session = store.open(args.name, create=False)
    entries = session.entries
    stored = session.backend.read_document(session.name, "view")
    view = session.view() if stored is not None else None
    if args.last:
        entries = entries[-args.last :]
    if args.json:
        from ..sessions.codec import encode_message

        dump_json(
            {
                **_summary(session),
                "entries": [
                    {"seq": e.seq, "ts": _stamp(e.timestamp), "message": encode_message(e.message)}
                    for e in entries
                ],
                "view": None if view is None else [encode_message(m) for m in view],
            }
        )
        return EXIT_OK
    s = _summary(session)
    say(
        f"{s['name']}: {s['messages']} messages, created {s['created']}, updated {s['updated']}",
        sys.stdout,
    )
    for e in entries:
        m = e.message
        say(f"[{e.seq}] {_stamp(e.timestamp)} {m.role}: {' '.join(_text(m).split())}", sys.stdout)
    if view is not None:
        # What an agent resuming the session sends: shown, since it is not the history.
        say(f"stored view (what the agent is sent), {len(view)} messages:", sys.stdout)
        for m in view:
            say(f"  {m.role}: {' '.join(_text(m).split())}", sys.stdout)
    return EXIT_OK


def _done(args: Any, data: dict[str, Any], line: str) -> int:
    if args.json:
        dump_json(data)
    else:
        say(line, sys.stdout)
    return EXIT_OK


def _export(store: Any, name: str, path: str) -> str:
    """Write the export of session ``name`` to the regular file ``path`` (owner-only, as the
    store's own files are) or to stdout (``-``); a device, FIFO or symlink is refused."""
    session = store.open(name, create=False)
    if path == STDIO:
        write_stdout(session.export_bytes())
        return STDIO
    check_destination(path)  # before reading the session: refuse early, write nothing
    write_atomic(Path(path), session.export_bytes(), mode=0o600)
    return path


#: An export holds a whole session; beyond this it is not one we will read into memory.
MAX_EXPORT_BYTES = 512 << 20


def _import(store: Any, path: str, name: str | None) -> Any:
    """Import the export at ``path`` (``-``: stdin): a regular file only, never through a
    symlink, read once and bounded (see ``compaction._reading``); errors name ``path``."""
    from .._reading import read_limited, read_regular
    from ..sessions.errors import SessionFormatError

    if path == STDIO:
        return store.import_(read_limited(sys.stdin.buffer, MAX_EXPORT_BYTES, "<stdin>"), name)
    data = read_regular(path, MAX_EXPORT_BYTES, "session export")
    try:
        return store.import_(data, name)
    except SessionFormatError as exc:  # the bytes were read here: name the file they came from
        raise SessionFormatError(path, exc.reason, exc.line) from None


def run(args: Any) -> int:
    store = _store(args)
    try:
        return _run(args, store)
    finally:
        store.close()  # a database store's connections and pool threads end with the command


def _run(args: Any, store: Any) -> int:
    action = args.action
    if action == "list":
        return _list(args, store)
    if action == "show":
        return _show(args, store)
    if action == "export":
        path = _export(store, args.name, args.path)
        if path == STDIO:
            return EXIT_OK  # stdout holds the export itself, nothing else
        return _done(
            args,
            {"name": args.name, "exported": path},
            f"exported session {args.name!r} to {path}",
        )
    if action == "import":
        name = args.name
        if args.name_option is not None:
            if name is not None and name != args.name_option:
                raise CliError(f"two names given: {name!r} and --name {args.name_option!r}")
            name = args.name_option
        session = _import(store, args.path, name)
        shown = "stdin" if args.path == STDIO else args.path
        return _done(
            args,
            {"name": session.name, "imported": shown, "messages": len(session.entries)},
            f"imported {shown} as session {session.name!r} ({len(session.entries)} messages)",
        )
    if action == "clear":
        store.clear(args.name)
        return _done(
            args,
            {"name": args.name, "cleared": True},
            f"cleared the history of session {args.name!r}",
        )
    if action == "delete":
        store.delete(args.name)
        return _done(args, {"name": args.name, "deleted": True}, f"deleted session {args.name!r}")
    raise CliError(f"unknown session action {action!r}")  # argparse already refused it
