"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions wire format.

Tests point :class:`~compaction.summarizers.OpenAIChatSummarizer` at it instead of the internet.
It records every request body it received, and answers according to ``server.mode``:

- ``reply`` (default): a normal completion whose content is ``server.text``;
- ``slow``: the same, after waiting ``server.delay`` seconds (released early on stop);
- ``error``: HTTP ``server.status`` (500, 429, ...) with an OpenAI-style error body;
- ``empty``: a completion whose content is the empty string;
- ``no_choices``: a completion with no choices at all;
- ``trickle``: a normal completion, sent one byte every ``server.interval`` seconds (a server
  that never lets a per-read timeout fire), until the client hangs up or the server stops;
- ``huge``: a completion whose content is ``server.size`` bytes, sent in 64 KiB writes until
  the client hangs up; ``server.sent`` counts the bytes that went out. With
  ``server.declare_length = False`` no Content-Length is sent (the body ends when the
  connection closes), so only reading can find out how big it is.
"""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    """Start with ``with ChatServer() as server:``; ``server.base_url`` is the API root."""

    def __init__(self) -> None:
        self.mode = "reply"
        self.text = "## Objective\nsummary from the local server"
        self.delay = 5.0
        self.status = 500
        self.interval = 0.2
        self.size = 50_000_000
        self.sent = 0
        self.declare_length = True
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._release = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()  # a slow answer still pending returns now
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _completion(self, body: dict[str, Any], content: str | None) -> dict[str, Any]:
        choices = (
            []
            if content is None
            else [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ]
        )
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "unknown"),
            "choices": choices,
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # the client may have given up (a timeout test): nothing left to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _headers(self, length: int | None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if length is not None:
                    self.send_header("Content-Length", str(length))
                self.end_headers()

            def _trickle(self, data: bytes) -> None:
                self._headers(len(data))
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    for i in range(len(data)):
                        if server._release.wait(server.interval):
                            return
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()

            def _huge(self, body: dict[str, Any]) -> None:
                head, tail = json.dumps(server._completion(body, "\x00")).encode().split(b"\\u0000")
                chunk = b"x" * 65536
                filler = server.size - len(head) - len(tail)
                size = len(head) + filler + len(tail)
                self._headers(size if server.declare_length else None)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(head)
                    while filler > 0 and not server._release.is_set():
                        piece = chunk[: min(filler, len(chunk))]
                        self.wfile.write(piece)
                        server.sent += len(piece)
                        filler -= len(piece)
                    self.wfile.write(tail)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.paths.append(self.path)
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                mode = server.mode
                if mode == "slow":
                    server._release.wait(server.delay)
                if mode == "error":
                    self._send(
                        server.status,
                        {"error": {"message": "boom", "type": "server_error", "code": None}},
                    )
                elif mode == "trickle":
                    self._trickle(json.dumps(server._completion(body, server.text)).encode())
                elif mode == "huge":
                    self._huge(body)
                elif mode == "empty":
                    self._send(200, server._completion(body, ""))
                elif mode == "no_choices":
                    self._send(200, server._completion(body, None))
                else:
                    self._send(200, server._completion(body, server.text))

        return Handler
