"""Subprocess side of the session tests: a separate Python process using the public API.

ROOT is a store directory or URL (postgresql://...).

worker.py dump ROOT NAME              print the session's snapshot as JSON
worker.py write ROOT NAME             add two messages + context/state/metadata, print ok
worker.py append ROOT NAME TAG COUNT  wait for a line on stdin, then append COUNT messages
worker.py churn ROOT NAME SEED        write forever, printing "ack ..." after each write
worker.py steady ROOT NAME            append until stdin closes, printing "ack ID I" each
worker.py big ROOT NAME MB            print "writing", then add one MB-megabyte message
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading

from compaction.messages import Message, ToolCall
from compaction.sessions import SessionStore

stop = threading.Event()


def _watch_stdin() -> None:
    sys.stdin.read()
    stop.set()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv: list[str]) -> None:
    command, root, name, *rest = argv
    if command == "steady":
        threading.Thread(target=_watch_stdin, daemon=True).start()
    store = SessionStore.from_url(root)  # a directory or a postgresql:// URL
    if command == "dump":
        session = store.open(name, create=False)
        print(json.dumps(session.snapshot()))
    elif command == "write":
        session = store.open(name)
        session.add_user("written in a child process")
        session.add_assistant("and answered there", meta={"k": [1, 2]})
        session.global_context["child"] = {"nested": [1, "two", None]}
        session.state["phase"] = "child"
        session.metadata["writer"] = "worker.py"
        print("ok")
    elif command == "append":
        tag, count = rest[0], int(rest[1])
        session = store.open(name)
        sys.stdin.readline()  # start together with the other workers
        for i in range(count):
            session.add(Message("user", f"{tag}:{i}"))
        session.state[tag] = count
        print("done", flush=True)
    elif command == "churn":
        # Each step is one batch: a tool call and its (often large) result, which must be
        # committed together or not at all.
        rng = random.Random(int(rest[0]))
        session = store.open(name)
        print("ready", flush=True)
        i = 0
        while True:
            size = rng.choice((10, 10, 2_000, 2_000, 20_000, 20_000, 70_000, 300_000))
            content = f"{rest[0]}/{i}:" + "x" * size
            call = ToolCall(f"call-{rest[0]}-{i}", "read", "{}")
            stored = session.add(
                Message("assistant", f"{rest[0]}/{i}:", tool_calls=(call,)),
                Message("tool", content, tool_call_id=call.id, meta={"sha256": digest(content)}),
            )
            print(f"ack message {stored[0].id} {stored[1].id}", flush=True)
            if i % 3 == 0:
                session.state.update(counter=i, blob="y" * rng.choice((10, 10, 100_000)))
                print(f"ack state {i}", flush=True)
            if i % 4 == 0:
                session.global_context["last"] = i
                print(f"ack context {i}", flush=True)
            if i % 5 == 0:
                session.set_view(session.messages[-2:])
            i += 1
    elif command == "steady":
        # Append one message at a time until stdin closes, acknowledging each (the server
        # restart test restarts PostgreSQL under it).
        session = store.open(name)
        print("ready", flush=True)
        i = 0
        while not stop.is_set():
            stored = session.add_user(f"steady:{i}")
            print(f"ack {stored.id} {i}", flush=True)
            i += 1
        print("done", flush=True)
    elif command == "big":
        session = store.open(name)
        session.add_user("before")
        content = "z" * (int(rest[0]) * 1_000_000)
        print("writing", flush=True)
        session.add_user(content)
        print("written", flush=True)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
