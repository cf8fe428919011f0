"""The secured compose cluster (``make docker-up SECURE=1``) driven from tests.

:class:`SecureComposeCluster` is a :class:`~.compose.ComposeCluster` over
``docker/docker-compose.yml`` with ``docker/docker-compose.secure.yml`` on
top: every listener SASL_SSL, SCRAM-SHA-512 between the brokers and for
clients, the AclAuthorizer on.  It comes up through ``docker/up.sh --secure``
(what ``make docker-up SECURE=1`` runs), so the test exercises the same path
as a developer: ``docker/secure-setup.sh`` makes the certificates and
passwords in :attr:`~SecureComposeCluster.secrets_dir` (a directory of the
test's own instead of ``build/docker-secure/<project>``), the one-shot
``scram-init`` service writes the ``broker`` and ``admin`` credentials to
ZooKeeper, and the script waits until every container is healthy.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from .compose import COMPOSE_FILE, REPO, ComposeCluster

__all__ = ["INIT_SERVICE", "SECURE_COMPOSE_FILE", "SecureComposeCluster"]

SECURE_COMPOSE_FILE = REPO / "docker" / "docker-compose.secure.yml"
UP_SCRIPT = REPO / "docker" / "up.sh"
#: the one-shot service that writes the brokers' and the admin's SCRAM credentials
INIT_SERVICE = "scram-init"


class SecureComposeCluster(ComposeCluster):
    """One project of the secured variant; its secrets in ``secrets_dir`` (made by ``up``)."""

    def __init__(self, secrets_dir: Path, name: str | None = None, log_dir: Path | None = None,
                 variables: dict[str, str] | None = None) -> None:
        super().__init__(name, log_dir, variables)
        self.secrets_dir = Path(secrets_dir).resolve()
        self.env["MAFKA_SECRETS_DIR"] = str(self.secrets_dir)
        #: what ``docker/up.sh --secure`` printed (the addresses and client configs it names)
        self.up_output = ""

    def compose(self, *args: str, timeout: float = 180.0, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "-f", str(SECURE_COMPOSE_FILE),
                            "-p", self.project, *args],
                           env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"docker-compose {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
        return r

    def up(self, timeout: float = 240.0) -> SecureComposeCluster:
        """``docker/up.sh --secure``: secrets, ``up -d``, every container healthy (its own 180 s limit)."""
        r = subprocess.run(["bash", str(UP_SCRIPT), "--secure"], env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        self.up_output = r.stdout
        if r.returncode != 0:
            raise RuntimeError(f"docker/up.sh --secure failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return self

    def save_logs(self, directory: Path) -> None:
        super().save_logs(directory)
        r = self.compose("logs", "--no-color", INIT_SERVICE, check=False, timeout=60)
        (directory / f"{INIT_SERVICE}.log").write_text(r.stdout + r.stderr)

    # ------------------------------------------------------------------ secrets and clients

    @property
    def ca(self) -> Path:
        """The CA certificate clients trust (``pki/ca.pem``)."""
        return self.secrets_dir / "pki" / "ca.pem"

    @property
    def admin_properties(self) -> Path:
        """Java client settings of the super user ``admin`` (``--command-config``)."""
        return self.secrets_dir / "admin.properties"

    def passwords(self) -> dict[str, str]:
        """``passwords.env``: ``MAFKA_BROKER_PASSWORD``, ``MAFKA_ADMIN_PASSWORD``."""
        out = {}
        for line in (self.secrets_dir / "passwords.env").read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                out[key.strip()] = value.strip()
        return out

    def client_config(self, user: str, password: str, bootstrap: str | None = None,
                      mechanism: str = "SCRAM-SHA-512", **extra: Any) -> dict[str, Any]:
        """confluent-kafka settings for ``user`` over SASL_SSL (host name checked against the certificate)."""
        return {"bootstrap.servers": bootstrap or self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
                "ssl.ca.location": str(self.ca), "ssl.endpoint.identification.algorithm": "https", **extra}

    def admin_config(self, bootstrap: str | None = None, **extra: Any) -> dict[str, Any]:
        return self.client_config("admin", self.passwords()["MAFKA_ADMIN_PASSWORD"], bootstrap, **extra)
