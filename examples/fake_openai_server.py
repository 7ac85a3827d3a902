"""A stand-in model for the examples: an OpenAI-compatible chat-completions server on
127.0.0.1, so that LiteLLM and the Agents SDK talk HTTP to it exactly as to a provider.

It asks for one ``read_file`` call per request until ``turns`` files have been read, then
answers. With ``"stream": true`` it answers in server-sent events, as providers do. It reports
usage (``prompt_tokens`` as characters / 4) and records how many tokens each request held
(``server.sizes``), so an example can show what the model was actually sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer"]

ANSWER = "The parser stops one line early in src/mod_7.py; the fix is in its loop bound."


class FakeOpenAIServer:
    """``with FakeOpenAIServer(turns=12) as server:``; ``server.base_url`` is the API root."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.sizes: list[int] = []  # characters / 4 of each request's messages
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        messages = body.get("messages", [])
        size = sum(len(json.dumps(m.get("content") or "")) for m in messages) // 4 + 1
        self.sizes.append(size)
        read = sum(1 for m in messages if m.get("role") == "tool")
        if read < self.turns:
            call = {
                "id": f"call_{read}",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"src/mod_{read}.py"}),
                },
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}, size
        return {"role": "assistant", "content": ANSWER}, size

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep the output clean
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                message, size = server._reply(body)
                usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                if body.get("stream"):
                    self._stream(message, finish, usage)
                    return
                data = json.dumps({
                    "id": "chatcmpl-local", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "local"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, Any], finish: str, usage: dict[str, int]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                if message.get("tool_calls"):
                    call = message["tool_calls"][0]
                    deltas.append({"tool_calls": [{"index": 0, **call}]})
                else:
                    words = message["content"].split(" ")
                    deltas += [{"content": w if n == 0 else " " + w} for n, w in enumerate(words)]
                chunks = [{"index": 0, "delta": d, "finish_reason": None} for d in deltas]
                chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
                for n, choice in enumerate(chunks):
                    event = {
                        "id": "chatcmpl-local", "object": "chat.completion.chunk", "created": 0,
                        "model": "local", "choices": [choice],
                    }  # fmt: skip
                    if n == len(chunks) - 1:
                        event["usage"] = usage
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler
