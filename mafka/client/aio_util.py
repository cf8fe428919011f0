"""Small asyncio helpers for the client core."""

from __future__ import annotations

import asyncio

__all__ = ["wait_event"]


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Waits until ``event`` is set or ``timeout`` seconds pass; True if it was set.

    Uses ``asyncio.timeout`` rather than ``asyncio.wait_for``: on CPython 3.11
    a task cancelled while inside ``wait_for(event.wait(), t)`` was seen to stay
    "cancelling" forever, which hung client shutdown.
    """
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
        return True
    except TimeoutError:
        return False
