"""Run README python blocks in order, in one namespace, in this (separate) process.

Reads ``[{"id": ..., "code": ...}, ...]`` as JSON on stdin; writes ``{id: {"ok", "stdout",
"error"}}`` as JSON on stdout. A separate process, because README code registers strategies,
connects event receivers and opens session stores: none of that may leak into the test run.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import sys
import traceback


def main() -> None:
    blocks = json.load(sys.stdin)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    results = {}
    real_stdout = sys.stdout
    for block in blocks:
        captured = io.StringIO()
        try:
            code = compile(block["code"], block["id"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            with contextlib.redirect_stdout(captured):
                outcome = eval(code, namespace)  # exec, with top-level await allowed
                if inspect.iscoroutine(outcome):
                    asyncio.run(outcome)
            results[block["id"]] = {"ok": True, "stdout": captured.getvalue(), "error": None}
        except BaseException:  # a README block that raises anything is a failing block
            results[block["id"]] = {
                "ok": False,
                "stdout": captured.getvalue(),
                "error": traceback.format_exc(),
            }
    json.dump(results, real_stdout)


if __name__ == "__main__":
    main()
