"""Network faults between the compose cluster's containers, with iptables inside them.

Every container of ``docker/docker-compose.yml`` has ``NET_ADMIN`` and the
``iptables`` command.  A cut between container A and a set of peers is two
rules in A only — drop what comes in from each peer, drop what goes out to
it — which stops traffic both ways while every other link (including the
host's clients, whose traffic arrives from the network's gateway) keeps
working.  :meth:`NetFaults.heal` flushes a container's rules.

The rules are run inside the containers with the Docker SDK's exec
(:meth:`ComposeCluster.exec`).  Addresses are the containers' own on the
project's network, read from their inspection (``attrs["NetworkSettings"]``);
they do not change while a container runs (a kill + start may give a new
one, so look them up again after a restart: :meth:`NetFaults.ip` does not cache).
"""

from __future__ import annotations

from .compose import ComposeCluster

__all__ = ["NetFaults"]


class NetFaults:
    """Cuts and heals links of one :class:`ComposeCluster`; remembers what it cut."""

    def __init__(self, cluster: ComposeCluster) -> None:
        self.cluster = cluster
        self.cut: set[str] = set()
        #: containers with a traffic shaper (a ``tc`` root qdisc) on eth0
        self.shaped: set[str] = set()

    @property
    def network(self) -> str:
        return self.cluster.network_name

    def ip(self, service: str) -> str:
        networks = self.cluster.container(service).attrs["NetworkSettings"]["Networks"]
        if self.network not in networks:
            raise RuntimeError(f"{service} is not on {self.network}: {sorted(networks)}")
        return networks[self.network]["IPAddress"]

    def gateway(self) -> str:
        """The network's gateway: where the host's clients' traffic comes from."""
        return self.cluster.network().attrs["IPAM"]["Config"][0]["Gateway"]

    def _iptables(self, service: str, *rules: list[str]) -> None:
        script = " && ".join("iptables " + " ".join(rule) for rule in rules)
        r = self.cluster.exec(service, "sh", "-c", script)
        if r.returncode != 0:
            raise RuntimeError(f"iptables in {service} failed: {r.stderr.strip()}")

    def isolate(self, service: str, peers: list[str], *, host: bool = False) -> None:
        """Cuts ``service`` from each of ``peers`` (both ways); with ``host``, from the host's clients too."""
        addresses = [self.ip(p) for p in peers] + ([self.gateway()] if host else [])
        rules: list[list[str]] = []
        for address in addresses:
            rules.append(["-A", "INPUT", "-s", address, "-j", "DROP"])
            rules.append(["-A", "OUTPUT", "-d", address, "-j", "DROP"])
        self._iptables(service, *rules)
        self.cut.add(service)

    def deafen(self, service: str, peers: list[str]) -> None:
        """One way: ``service`` drops what each of ``peers`` sends it, and can still send to them."""
        self._iptables(service, *[["-A", "INPUT", "-s", self.ip(p), "-j", "DROP"] for p in peers])
        self.cut.add(service)

    def lossy(self, service: str, probability: float) -> None:
        """Drops each packet ``service`` receives or sends with ``probability`` (iptables' statistic match).

        The kernel of these machines has no ``sch_netem`` (``CONFIG_NET_SCH_NETEM``
        is not set), so loss is done by the firewall, both ways, on every link of
        the container: its peers' and the host's clients' alike.
        """
        match = ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.4f}", "-j", "DROP"]
        self._iptables(service, ["-A", "INPUT", *match], ["-A", "OUTPUT", *match])
        self.cut.add(service)

    def throttle(self, service: str, rate: str = "4mbit", latency_ms: int = 200) -> None:
        """Shapes what ``service`` sends to ``rate`` with a token bucket whose queue holds up to ``latency_ms``.

        Without netem there is no fixed added delay; a bucket slower than the
        traffic builds a queue instead, so packets wait up to ``latency_ms``
        (and are dropped beyond it): the slow, congested link of a busy host.
        """
        r = self.cluster.exec(service, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate,
                              "burst", "32kbit", "latency", f"{latency_ms}ms")
        if r.returncode != 0:
            raise RuntimeError(f"tc in {service} failed: {r.stderr.strip()}")
        self.shaped.add(service)
        self.cut.add(service)

    def heal(self, service: str) -> None:
        """Removes every rule and queue discipline this class put in ``service``."""
        self._iptables(service, ["-F", "INPUT"], ["-F", "OUTPUT"])
        if service in self.shaped:
            self.cluster.exec(service, "tc", "qdisc", "del", "dev", "eth0", "root")
            self.shaped.discard(service)
        self.cut.discard(service)

    def heal_all(self) -> None:
        for service in sorted(self.cut):
            self.heal(service)
