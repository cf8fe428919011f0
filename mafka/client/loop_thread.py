"""A private asyncio loop on a daemon thread: how the synchronous clients drive the async core.

:meth:`LoopThread.run` submits a coroutine and waits (bounded) for its
result from the calling thread; :meth:`LoopThread.call_soon` schedules a
plain callback without waiting.  :meth:`LoopThread.stop` stops the loop
and joins the thread, so a closed client leaves no thread behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """One event loop, one thread.  Thread-safe entry points only."""

    def __init__(self, name: str = "mafka-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # Let cancelled tasks finish their cleanup before the loop closes.
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coro`` on the loop and returns its result.

        Raises:
            TimeoutError: not done within ``timeout`` (the coroutine is cancelled).
            whatever the coroutine raised.
        """
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError("operation timed out") from None

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the loop and joins the thread (idempotent; no-op from the loop thread itself)."""
        if not self._thread.is_alive():
            return
        if threading.current_thread() is self._thread:
            self.loop.stop()
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
