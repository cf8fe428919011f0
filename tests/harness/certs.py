"""A throw-away test PKI for TLS tests and the docker images, made with ``cryptography``.

:func:`generate_pki` writes into a directory, as PEM files laid out for Kafka's PEM
stores (``ssl.keystore.type=PEM``):

==============================  ============================================================
``ca.pem``                      the test CA's certificate: the trust store
                                (``ssl.truststore.location``)
``ca-key.pem``                  the CA's private key (unencrypted; to sign more certificates)
``broker.pem``                  key store (``ssl.keystore.location``): the broker's private
                                key, its certificate and the CA certificate.  subjectAltNames
                                ``localhost``, ``127.0.0.1`` and every extra host name given;
                                usable for serverAuth and clientAuth (brokers present it to
                                each other on an inter-broker listener that requires
                                client certificates)
``client-<name>.pem``           a key store per client DN (``<name>``: the DN's CN, made
                                file-name safe)
``client-expired.pem``          a client (``CN=expired,OU=test,O=Mafka``) whose
                                certificate expired a day ago
``untrusted-ca.pem``            a second CA nobody trusts
``client-untrusted.pem``        a client (``CN=untrusted,OU=test,O=Mafka``) signed by it
``*-encrypted.pem``             with ``key_password``: ``broker.pem`` and every
                                ``client-<name>.pem`` again, the key encrypted (PKCS#8,
                                for ``ssl.key.password``)
==============================  ============================================================

Keys are EC P-256 (a few milliseconds each; both OpenSSL and the JVM accept them).
Certificates are valid from an hour before ``now`` (clock skew between containers) for
``days`` days.  Also a command: ``python -m tests.harness.certs <dir> [--host NAME ...]
[--client DN ...] [--key-password PW]``, which ``docker/secure-setup.sh`` runs when the
secured compose cluster comes up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["DEFAULT_CLIENTS", "Pki", "generate_pki", "main"]

#: The client DNs generated when none are given.
DEFAULT_CLIENTS: tuple[str, ...] = ("CN=alice,OU=test,O=Mafka", "CN=bob,OU=test,O=Mafka")

_BROKER_DN = "CN=mafka-broker,OU=test,O=Mafka"
_EXPIRED_DN = "CN=expired,OU=test,O=Mafka"
_UNTRUSTED_DN = "CN=untrusted,OU=test,O=Mafka"


@dataclass(frozen=True)
class Pki:
    """Paths of what :func:`generate_pki` wrote (see the module docstring for the layout).

    ``clients`` maps each client DN, as given, to its key store; ``encrypted_clients``
    likewise for the encrypted copies (empty without ``key_password``).
    """

    directory: Path
    ca: Path
    ca_key: Path
    broker: Path
    clients: dict[str, Path]
    expired_client: Path
    untrusted_ca: Path
    untrusted_client: Path
    key_password: str | None = None
    encrypted_broker: Path | None = None
    encrypted_clients: dict[str, Path] | None = None

    def client(self, dn: str) -> Path:
        """The key store of the client ``dn``.

        Raises:
            KeyError: no such client was generated.
        """
        return self.clients[dn]


@dataclass(frozen=True)
class _Issued:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate


def generate_pki(directory: str | Path, *, hosts: Iterable[str] = (),
                 clients: Sequence[str] = DEFAULT_CLIENTS, key_password: str | None = None,
                 now: dt.datetime | None = None, days: int = 3650) -> Pki:
    """Writes a test PKI into ``directory`` (created if missing; files are overwritten).

    ``hosts`` are extra subjectAltNames of the broker certificate (an IP address becomes an
    IP SAN, anything else a DNS SAN); ``clients`` are client DNs in RFC 4514/2253 form, most
    specific first (``CN=alice,OU=test,O=Mafka``), which is also how the broker will see
    them; ``key_password`` adds encrypted copies of the broker's and clients' key stores.

    Raises:
        ValueError: a client DN does not parse, or two clients map to the same file name.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = now or dt.datetime.now(dt.UTC)
    start, end = now - dt.timedelta(hours=1), now + dt.timedelta(days=days)

    ca = _self_signed("CN=Mafka Test CA,OU=test,O=Mafka", start, end)
    untrusted = _self_signed("CN=Mafka Untrusted CA,OU=test,O=Mafka", start, end)
    names: list[x509.GeneralName] = [x509.DNSName("localhost"),
                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for host in hosts:
        general = _general_name(host)
        if general not in names:
            names.append(general)
    broker = _issue(ca, _BROKER_DN, start, end, server=True, alt_names=names)

    _write(out / "ca.pem", _cert_pem(ca.certificate))
    _write(out / "ca-key.pem", _key_pem(ca.key, None))
    _write(out / "untrusted-ca.pem", _cert_pem(untrusted.certificate))
    _write(out / "broker.pem", _keystore(broker, ca, None))

    client_paths: dict[str, Path] = {}
    encrypted_paths: dict[str, Path] = {}
    # The negative-test clients' files are taken.
    used: dict[str, str] = {"expired": _EXPIRED_DN, "untrusted": _UNTRUSTED_DN}
    for dn in clients:
        stem = _file_stem(dn)
        if stem in used:
            raise ValueError(f"clients {used[stem]!r} and {dn!r} would share client-{stem}.pem")
        used[stem] = dn
        issued = _issue(ca, dn, start, end, server=False)
        client_paths[dn] = _write(out / f"client-{stem}.pem", _keystore(issued, ca, None))
        if key_password is not None:
            encrypted_paths[dn] = _write(out / f"client-{stem}-encrypted.pem",
                                         _keystore(issued, ca, key_password))

    expired = _issue(ca, _EXPIRED_DN, now - dt.timedelta(days=30), now - dt.timedelta(days=1),
                     server=False)
    stranger = _issue(untrusted, _UNTRUSTED_DN, start, end, server=False)
    encrypted_broker = None
    if key_password is not None:
        encrypted_broker = _write(out / "broker-encrypted.pem", _keystore(broker, ca, key_password))
    return Pki(
        directory=out,
        ca=out / "ca.pem",
        ca_key=out / "ca-key.pem",
        broker=out / "broker.pem",
        clients=client_paths,
        expired_client=_write(out / "client-expired.pem", _keystore(expired, ca, None)),
        untrusted_ca=out / "untrusted-ca.pem",
        untrusted_client=_write(out / "client-untrusted.pem", _keystore(stranger, untrusted, None)),
        key_password=key_password,
        encrypted_broker=encrypted_broker,
        encrypted_clients=encrypted_paths if key_password is not None else None,
    )


def _self_signed(dn: str, start: dt.datetime, end: dt.datetime) -> _Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name.from_rfc4514_string(dn)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return _Issued(key, certificate)


def _issue(issuer: _Issued, dn: str, start: dt.datetime, end: dt.datetime, *, server: bool,
           alt_names: list[x509.GeneralName] | None = None) -> _Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if server:
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name.from_rfc4514_string(dn))
        .issuer_name(issuer.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            issuer.key.public_key()), critical=False)
    )
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    return _Issued(key, builder.sign(issuer.key, hashes.SHA256()))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _file_stem(dn: str) -> str:
    """The file-name part for a client DN: its CN (or the whole DN), made safe."""
    name = x509.Name.from_rfc4514_string(dn)
    cns = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    text = str(cns[0].value) if cns else dn
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "client"


def _cert_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None) -> bytes:
    # PKCS#8, the format Kafka's PEM key store reads ("PRIVATE KEY" / "ENCRYPTED PRIVATE KEY").
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode("utf-8")) if password is not None
        else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             encryption)


def _keystore(issued: _Issued, issuer: _Issued, password: str | None) -> bytes:
    """Kafka's PEM key store file: the private key, then the chain, leaf first."""
    return _key_pem(issued.key, password) + _cert_pem(issued.certificate) + _cert_pem(issuer.certificate)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.harness.certs <dir> [--host NAME ...] [--client DN ...] [--key-password PW]``."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.certs",
                                     description="Write a test PKI (PEM) for Mafka's TLS listeners.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--host", action="append", default=[],
                        help="an extra subjectAltName of the broker certificate (repeatable)")
    parser.add_argument("--client", action="append", default=None,
                        help=f"a client certificate DN (repeatable; default {', '.join(DEFAULT_CLIENTS)})")
    parser.add_argument("--key-password", default=None,
                        help="also write *-encrypted.pem key stores encrypted with this password")
    args = parser.parse_args(argv)
    pki = generate_pki(args.directory, hosts=args.host,
                       clients=tuple(args.client) if args.client else DEFAULT_CLIENTS,
                       key_password=args.key_password)
    for path in sorted(p for p in pki.directory.glob("*.pem")):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
