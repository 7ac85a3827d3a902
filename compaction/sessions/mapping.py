"""A dict-like view of one of a session's JSON documents (global context, state, metadata).

Every write goes straight to disk: under the session lock the document is re-read, changed
and atomically replaced, so two processes setting different keys both keep their change,
and a value read back in this process is the value a fresh process reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Protocol

from .codec import check_json


class Documents(Protocol):
    """What a mapping needs from its session (a Protocol, so this module imports no session)."""

    name: str

    def _read_data(self, kind: str) -> dict[str, Any]: ...

    def _update_data(self, kind: str, mutate: Callable[[dict[str, Any]], None]) -> None: ...


__all__ = ["SessionMapping"]


def _copy(value: Any) -> Any:
    # A JSON round trip, not copy.deepcopy: it takes any depth the JSON reader took (deepcopy
    # needs several Python frames per level and would hit the recursion limit first).
    return check_json(value, "a stored value")


class SessionMapping(MutableMapping[str, Any]):
    """Keys are str, values JSON-serialisable; reads return copies, so edit by assignment."""

    def __init__(self, session: Documents, kind: str, label: str) -> None:
        self._session = session
        self._kind = kind
        self._label = label

    def _data(self) -> dict[str, Any]:
        return self._session._read_data(self._kind)

    def _checked(self, key: object, value: Any) -> Any:
        if not isinstance(key, str):
            raise TypeError(f"{self._label} keys must be str, got {type(key).__name__} {key!r}")
        return check_json(value, f"{self._label} value for key {key!r}")

    def _change(self, mutate: Callable[[dict[str, Any]], None]) -> None:
        self._session._update_data(self._kind, mutate)

    def __getitem__(self, key: str) -> Any:
        return _copy(self._data()[key])

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data()))

    def __len__(self) -> int:
        return len(self._data())

    def __contains__(self, key: object) -> bool:
        return key in self._data()

    def __setitem__(self, key: str, value: Any) -> None:
        value = self._checked(key, value)
        self._change(lambda data: data.__setitem__(key, value))

    def __delitem__(self, key: str) -> None:
        def remove(data: dict[str, Any]) -> None:
            del data[key]

        self._change(remove)

    def update(  # type: ignore[override]
        self, other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **kwargs: Any
    ) -> None:
        """Set several keys in one atomic write."""
        items = dict(other)
        items.update(kwargs)
        checked = {key: self._checked(key, value) for key, value in items.items()}
        if checked:
            self._change(lambda data: data.update(checked))

    def clear(self) -> None:
        """Remove every key in one atomic write."""
        self._change(lambda data: data.clear())

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the whole mapping."""
        return _copy(self._data())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{self._label} of session {self._session.name!r}: {self._data()!r}>"
