"""Serving the console's WSGI app with Twisted Web (already Mafka's network stack): not Flask's dev server.

:func:`serve` puts the app in a :class:`twisted.web.wsgi.WSGIResource` over a thread pool
of its own (requests run in those threads; the reactor only moves bytes), listens on
``host:port`` (port 0: any free port), calls ``on_listening(host, port)`` with the port
actually bound, and runs the reactor until SIGINT or SIGTERM; then ``on_stop`` runs (the
sampler and clients are closed) and it returns.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, cast

__all__ = ["serve", "THREADS"]

#: requests served at once (each may wait up to the console's timeout on the cluster)
THREADS = 16


def serve(app: Any, host: str, port: int, on_listening: Callable[[str, int], None],
          on_stop: Callable[[], None] = lambda: None, threads: int = THREADS) -> None:
    """Serves ``app`` until SIGINT/SIGTERM (see the module docstring).

    Raises:
        twisted.internet.error.CannotListenError: the address is taken or not ours.
    """
    from twisted.internet import reactor as installed
    from twisted.internet.base import ReactorBase
    from twisted.python.threadpool import ThreadPool
    from twisted.web.server import Site
    from twisted.web.wsgi import WSGIResource

    reactor = cast(ReactorBase, installed)
    pool = ThreadPool(minthreads=1, maxthreads=threads, name="mafka-console")
    site = Site(WSGIResource(reactor, pool, app))
    site.displayTracebacks = False
    listening = reactor.listenTCP(port, site, interface=host)  # type: ignore[attr-defined]
    pool.start()
    state = {"stopping": False}

    def stop(signum: int, frame: Any) -> None:
        if state["stopping"]:
            return
        state["stopping"] = True
        reactor.callFromThread(reactor.stop)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    reactor.callWhenRunning(on_listening, host, listening.getHost().port)
    try:
        reactor.run(installSignalHandlers=False)
    finally:
        pool.stop()
        on_stop()
