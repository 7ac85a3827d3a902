"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for turn-loop tests.

A real HTTP server (``http.server`` in a thread, port chosen by the OS) speaking the
chat-completions wire format, so the ``openai`` client is exercised for real: the request
bodies it receives are recorded, and it answers from a script, one reply per request (by
default: first a request for a tool call, then a final answer).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Mapping[str, Any]  # an assistant message dict: {"content": ..., "tool_calls": [...]}


def tool_call_reply(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> Reply:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def text_reply(text: str) -> Reply:
    return {"role": "assistant", "content": text}


class ScriptedChatServer:
    """Use as a context manager; ``base_url`` is what the openai client takes.

    ``script`` is a list of replies, or a function from the request body to a reply.
    ``prompt_tokens`` (a function of the request body) is the input count the server reports
    as its usage (default: characters of content / 4, plus 1). A request with ``"stream":
    true`` is answered as server-sent events, the reply in chunks and the usage in the last.
    ``requests`` holds every request body received, in order. A request past the end of the
    script gets HTTP 500 (and is recorded), so a test never hangs on a loop that asks too
    often.
    """

    def __init__(
        self,
        script: Sequence[Reply] | Callable[[dict[str, Any]], Reply],
        prompt_tokens: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self.script = script
        self.prompt_tokens = prompt_tokens
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, answer = server._answer(self.path, body)
                if status != 200 or not body.get("stream"):
                    self._send(status, answer)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(answer):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.paths.append(path)
            if callable(self.script):
                reply: Reply | None = self.script(body)
            else:
                reply = self.script[n] if n < len(self.script) else None
        if reply is None:
            return 500, {"error": {"message": f"the script has no reply for request {n}"}}
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        prompt = self.prompt_tokens(body) if self.prompt_tokens else prompt_chars // 4 + 1
        message = {"role": "assistant", **reply}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 1,
                "total_tokens": prompt + 1,
            },
        }

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _chunks(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole chat completion as the stream of chunks a server would send for it."""
    message = answer["choices"][0]["message"]
    head = {k: answer[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("content"):
        delta["content"] = message["content"]
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    finish = answer["choices"][0]["finish_reason"]
    return [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "choices": [], "usage": answer["usage"]},
    ]
