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

__all__ = ["TCPTransport", "tcp_transport", "set_no_delay", "set_read_size", "READ_SIZE"]


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


#: How much one read of a broker's sockets takes (Twisted reads 64 KiB at a time).  A 1 MiB
#: produce request or replica fetch response then arrives in one reactor turn, not sixteen:
#: on a loaded machine each turn waits for the CPU, and a replicated acks=all produce
#: waits for two such transfers in a row (``make bench-replication``: RF 3 acks=all went
#: from 0.28x to about 0.5x of RF 1 acks=1 with this alone).  Python allocates the buffer
#: per read and shrinks it to what arrived, so small reads stay cheap.
READ_SIZE = 1 << 20


def set_read_size(transport: object, size: int = READ_SIZE) -> None:
    """Makes the TCP transport under *transport* (through any TLS layers) read up to *size* bytes at a time."""
    seen = 0
    while transport is not None and seen < 4:
        if hasattr(transport, "bufferSize") and hasattr(transport, "socket"):
            transport.bufferSize = size  # twisted.internet.tcp.Connection's
            return
        transport = getattr(transport, "transport", None)
        seen += 1
