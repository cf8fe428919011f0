"""Kernel.close ends every background task, even one that swallowed a cancellation."""

from __future__ import annotations

import asyncio
import time

from mafka.client.config import parse_config
from mafka.client.kernel import Kernel


def test_close_ends_a_background_loop_that_swallowed_its_first_cancellation():
    # What Python 3.11's asyncio.wait_for does when a cancellation arrives as its inner future
    # completes: it returns the result, and a loop around it goes on to its next request.
    swallowed = []

    async def loop_that_swallows_one_cancel() -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed.append(True)

    async def scenario() -> float:
        kernel = Kernel(parse_config("consumer", {"bootstrap.servers": "127.0.0.1:1"}))
        task = kernel.spawn(loop_that_swallows_one_cancel())
        await asyncio.sleep(0)
        began = time.monotonic()
        await asyncio.wait_for(kernel.close(), 5)
        assert task.cancelled()
        return time.monotonic() - began

    took = asyncio.run(scenario())
    assert swallowed == [True]
    assert took < 1.0
