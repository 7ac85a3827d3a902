"""A TCP proxy on 127.0.0.1 between a client and the test server, that can misbehave on cue.

``stall()``: from now on forward nothing and keep every socket open (a frozen server, a
partition, a load balancer dropping a flow: TCP itself notices nothing, the kernel keeps
acknowledging). ``drop_after_commit()``: forward the next COMMIT's acknowledgement, then cut
every connection and refuse new ones for ``down`` seconds (a server lost right after a
commit).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time

__all__ = ["Proxy"]


class Proxy:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = int(self._server.getsockname()[1])
        self._stalled = threading.Event()
        self._armed = threading.Event()
        self._down_until = 0.0
        self._down = 0.0
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        """``database_url`` (on the upstream server) through this proxy."""
        scheme, rest = database_url.split("://", 1)
        auth, _, tail = rest.rpartition("@")
        path = tail.split("/", 1)[1]
        return f"{scheme}://{auth + '@' if auth else ''}127.0.0.1:{self.port}/{path}"

    def stall(self) -> None:
        self._stalled.set()

    def drop_after_commit(self, down: float) -> None:
        self._down = down
        self._armed.set()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        self._drop_all()

    def _drop_all(self) -> None:
        for s in list(self._sockets):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if time.monotonic() < self._down_until:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            self._sockets += [client, upstream]
            for a, b, from_server in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(a, b, from_server), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket, from_server: bool) -> None:
        with contextlib.suppress(OSError, ValueError):
            while not self._closed:
                ready, _, _ = select.select([a], [], [], 0.05)
                if self._stalled.is_set() or not ready:
                    continue
                data = a.recv(65536)
                if not data:
                    return
                b.sendall(data)
                if from_server and self._armed.is_set() and b"COMMIT\x00" in data:
                    self._armed.clear()
                    self._down_until = time.monotonic() + self._down
                    self._drop_all()
                    return
