"""Blocking work awaited from the event loop without holding the process at exit.

Decides: that the service's blocking calls (a tick, stopping the informers and the
elector) each run in their own daemon thread. `asyncio.to_thread` would use the loop's
default executor, whose threads Python joins at exit and `run_app` waits for: a tick
stuck in API retries then kept a stopped pod alive past its termination grace period.
A daemon thread still running at exit is abandoned; everything it writes is either
idempotent (server-side apply) or transactional (SQLite).

Must not: decide how long to wait (server.py's SHUTDOWN_BUDGET_S does).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_daemon_thread(function: Callable[..., T], *args: Any, name: str = "headstart") -> T:
    """`function(*args)` in a new daemon thread; its result or exception, awaited."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the awaiting task was cancelled (shutdown): nobody wants it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        result, error = None, None
        try:
            result = function(*args)
        except BaseException as caught:  # delivered to the awaiting task, not lost
            error = caught
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the event loop is closed: the service has stopped
            pass

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
