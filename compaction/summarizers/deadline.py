"""Deadlines for summariser calls: the timeout bounds the whole call, and a late answer is dropped.

A per-read socket timeout is not a deadline: a server that trickles a byte every half second
never trips it and holds the caller for minutes. ``asyncio.wait_for`` is not one either: it
waits for the task it cancelled, so a coroutine that swallows the cancellation has its late
answer returned. And ``asyncio.to_thread`` runs in the loop's default executor, which
``asyncio.run`` joins on exit, so a blocked summariser keeps the program from ending. Hence
these helpers: the caller is answered at the deadline, whatever the work does, and work left
behind runs in a daemon thread (or a cancelled task) whose answer nobody reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["await_with_deadline", "call_with_deadline", "check_timeout", "in_daemon_thread"]

T = TypeVar("T")


def check_timeout(option: str, value: Any) -> float:
    """``value`` as a timeout in seconds, or a clear error naming ``option``.

    A timeout must be a finite positive number no larger than the platform's longest wait
    (``threading.TIMEOUT_MAX``): ``inf`` would fail every call with an OverflowError, and
    ``nan`` would never compare as expired.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{option} must be a number of seconds, got {type(value).__name__}")
    if not (math.isfinite(value) and 0 < value <= threading.TIMEOUT_MAX):
        raise ValueError(
            f"{option} must be a finite number of seconds > 0 and <= {threading.TIMEOUT_MAX:.0f}"
            f", got {value!r} (use None for no timeout, where that is allowed)"
        )
    return float(value)


def call_with_deadline(fn: Callable[..., T], args: tuple[Any, ...], timeout: float, what: str) -> T:
    """``fn(*args)``, or ``TimeoutError`` once ``timeout`` seconds have passed.

    The call runs in a daemon thread that is not waited for after the deadline: a call that
    hangs for good neither holds up the caller nor keeps the interpreter from exiting. Its
    late answer (or error) is dropped.
    """
    box: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box["value"] = context.run(fn, *args)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="compaction-summarizer", daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError(f"{what} did not answer within {timeout}s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


async def in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """``await`` a blocking ``fn(*args)`` run in a daemon thread.

    Unlike ``asyncio.to_thread`` (the loop's default executor, which ``asyncio.run`` joins
    before it returns), a thread still blocked when the caller stops waiting does not keep
    the event loop, or the program, alive.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # the caller gave up (a deadline): the answer is dropped
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(fn, *args)
        except BaseException as exc:
            error = exc
        # A closed loop raises RuntimeError: nobody is waiting for this answer any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="compaction-summarizer", daemon=True).start()
    return await future


def _drop(task: asyncio.Future[Any]) -> None:
    # Read what a cancelled task ended with, so asyncio never logs it as unretrieved.
    if not task.cancelled():
        task.exception()


async def await_with_deadline(awaitable: Awaitable[T], timeout: float, what: str) -> T:
    """The result of ``awaitable``, or ``TimeoutError`` once ``timeout`` has passed.

    At the deadline the work is cancelled and *not* waited for, so a coroutine that ignores
    the cancellation can neither hold the caller nor have its late answer used.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_drop)
        raise
    if task in done:
        return task.result()
    task.cancel()
    task.add_done_callback(_drop)
    raise TimeoutError(f"{what} did not answer within {timeout}s")
