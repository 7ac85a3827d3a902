"""A real blinker subscriber that records every signal of :mod:`compaction.events` in order."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from blinker import Signal

from compaction import events

# events also exports the namespace and record_error_text: only the signals are recorded.
SIGNALS = [
    getattr(events, name) for name in events.__all__ if isinstance(getattr(events, name), Signal)
]


class Recorded(list):
    """``(short signal name, sender, keyword arguments)`` in the order they were sent."""

    def names(self, *only: str) -> list[str]:
        return [n for n, _, _ in self if not only or n in only]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [kw for n, _, kw in self if n == name]

    def senders(self, name: str) -> list[Any]:
        return [s for n, s, _ in self if n == name]


@contextmanager
def recording() -> Iterator[Recorded]:
    seen = Recorded()
    receivers = []
    for signal in SIGNALS:
        short = signal.name.split(".", 1)[1]

        def receive(sender: Any, _short: str = short, **kw: Any) -> None:
            seen.append((_short, sender, kw))

        signal.connect(receive)
        receivers.append((signal, receive))
    try:
        yield seen
    finally:
        for signal, receive in receivers:
            signal.disconnect(receive)
