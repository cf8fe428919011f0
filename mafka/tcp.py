"""The transport of mafka's connected Twisted protocols, as a type.

Twisted types ``Protocol.transport`` as ``ITransport | None``: None until
``makeConnection``, and after it the narrowest interface every transport
provides.  The broker's listeners (:mod:`mafka.broker.network`) and the
inter-broker connections (:mod:`mafka.interbroker.connection`) run over TCP,
whose transports (``twisted.internet.tcp.Server`` and ``Client``) also
provide ``ITCPTransport`` (``abortConnection``), ``IConsumer``
(``registerProducer``) and ``IPushProducer`` (``pauseProducing``,
``resumeProducing``), as does the tests' ``StringTransport``.
:func:`tcp_transport` gives a connected protocol's transport that type; it
only reads the attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, cast

from twisted.internet import protocol
from twisted.internet.interfaces import IAddress, IProducer

__all__ = ["TCPTransport", "tcp_transport"]


class TCPTransport(Protocol):
    """What mafka uses of a connected TCP transport."""

    def write(self, data: bytes) -> None: ...

    def writeSequence(self, data: Iterable[bytes]) -> None: ...  # noqa: N802 (Twisted's name)

    def loseConnection(self) -> None: ...  # noqa: N802

    def abortConnection(self) -> None: ...  # noqa: N802

    def getPeer(self) -> IAddress: ...  # noqa: N802

    def pauseProducing(self) -> None: ...  # noqa: N802

    def resumeProducing(self) -> None: ...  # noqa: N802

    def registerProducer(self, producer: IProducer, streaming: bool) -> None: ...  # noqa: N802


def tcp_transport(proto: protocol.Protocol) -> TCPTransport:
    """The transport of ``proto``, connected over TCP (see the module docstring)."""
    return cast(TCPTransport, proto.transport)


def set_no_delay(transport: object) -> None:
    """Turns Nagle off on the TCP socket under *transport*, through any TLS layers.

    A TLS transport (``TLSMemoryBIOProtocol``) has no ``setTcpNoDelay``; the
    TCP transport it writes to, its ``transport``, does.
    """
    seen = 0
    while transport is not None and seen < 4:
        setter = getattr(transport, "setTcpNoDelay", None)
        if setter is not None:
            setter(True)
            return
        transport = getattr(transport, "transport", None)
        seen += 1
