"""The console's clients: one cached :class:`~mafka.client.AdminClient`, or one per logged-in user.

A :class:`Backend` is what a page reads and changes the cluster through: a
:class:`~mafka.console.cluster.ClusterReader`, its :class:`~mafka.console.actions.Actions`
and a :class:`~mafka.console.browse.Browser`, all over one admin client (and, for the
browser, consumers with the same settings).

:class:`Console` holds them.  Without SASL it has one backend for everybody, opened at
start.  When the ``--command-config`` says SASL (``security.protocol`` SASL_PLAINTEXT or
SASL_SSL), each user logs in with their own SASL username and password: :meth:`Console.login`
opens a backend with those credentials (and the file's other settings: mechanism, TLS),
checks them with a Metadata request, and keeps it for that browser session until logout
or :data:`IDLE_S` of disuse — so each user sees only what their principal may describe,
as the brokers answer it.  Passwords are kept only inside that user's client settings,
never in the cookie.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mafka.client.admin import AdminClient
from mafka.client.config import SASL_PROTOCOLS
from mafka.client.consumer import Consumer

from .actions import Actions
from .browse import Browser
from .cluster import ClusterReader
from .errors import ConsoleError, console_error
from .guard import new_token
from .sampler import Sampler
from .wire import AdminWire

__all__ = ["Backend", "Console", "open_backend", "needs_login", "IDLE_S"]

log = logging.getLogger(__name__)

#: a logged-in user's clients are closed after this long without a request
IDLE_S = 3600.0


@dataclass
class Backend:
    reader: ClusterReader
    actions: Actions
    browser: Browser
    username: str | None = None

    def close(self) -> None:
        try:
            self.reader.admin.close()
        except Exception:  # noqa: BLE001 - closing must not fail a logout or a shutdown
            log.exception("closing the admin client failed")


def needs_login(settings: dict[str, Any]) -> bool:
    """Whether client ``settings`` use SASL (the console then asks each user to log in)."""
    return str(settings.get("security.protocol", "")).lower() in SASL_PROTOCOLS


def open_backend(settings: dict[str, Any], timeout: float, probe_timeout: float,
                 sampler: Sampler | None = None, username: str | None = None) -> Backend:
    """A backend over a new AdminClient with ``settings`` (and consumers with the same).

    Raises:
        ConfigError (a ValueError): bad settings.
    """
    admin = AdminClient(settings)
    reader = ClusterReader(admin, AdminWire(admin), timeout, probe_timeout,
                           scrapes=sampler.scrapes if sampler is not None else list,
                           rates=sampler.rates if sampler is not None else dict)

    def consumer(extra: dict[str, Any]) -> Consumer:
        return Consumer({**settings, **extra})

    return Backend(reader, Actions(reader), Browser(admin, consumer, timeout), username)


class Console:
    """The backends the web app serves from (see the module docstring).

    ``shared`` is the one backend when nobody logs in; ``login_with(username, password)``
    opens a user's backend when they must (SASL).  ``hanging_after_ms`` overrides
    ``transaction.max.timeout.ms`` as the age of a hanging transaction.
    """

    def __init__(self, shared: Backend | None = None, sampler: Sampler | None = None,
                 login_with: Callable[[str, str], Backend] | None = None,
                 hanging_after_ms: int | None = None, idle_s: float = IDLE_S, plans: Any = None) -> None:
        if (shared is None) == (login_with is None):
            raise ValueError("a console has either a shared backend or a login")
        #: the rebalancer's plan from ZooKeeper (a :class:`~mafka.console.rebalancer_plan.PlanReader`), or None
        self.plans = plans
        self.shared = shared
        self.sampler = sampler
        self._login_with = login_with
        self.hanging_after_ms = hanging_after_ms
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._users: dict[str, tuple[Backend, float]] = {}

    @property
    def login_required(self) -> bool:
        return self._login_with is not None

    def backend(self, user_token: str | None) -> Backend | None:
        """The backend for a session (its login token, if any); None: the user must log in."""
        if self.shared is not None:
            return self.shared
        self._expire()
        if not user_token:
            return None
        with self._lock:
            entry = self._users.get(user_token)
            if entry is None:
                return None
            self._users[user_token] = (entry[0], time.monotonic())
            return entry[0]

    def login(self, username: str, password: str) -> str:
        """Opens and checks ``username``'s clients; returns the session's login token.

        Raises:
            ConsoleError: the credentials were refused (SASL_AUTHENTICATION_FAILED) or the
                cluster did not answer.
        """
        assert self._login_with is not None
        try:
            backend = self._login_with(username, password)
        except ValueError as exc:
            raise ConsoleError("INVALID_CONFIG", str(exc)) from None
        try:
            backend.reader.check_login()
        except ConsoleError:
            backend.close()
            raise
        except Exception as exc:  # noqa: BLE001
            backend.close()
            raise console_error(exc, "login") from None
        token = new_token()
        with self._lock:
            self._users[token] = (backend, time.monotonic())
        return token

    def logout(self, user_token: str | None) -> None:
        with self._lock:
            entry = self._users.pop(user_token or "", None)
        if entry is not None:
            entry[0].close()

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [t for t, (_, used) in self._users.items() if now - used > self.idle_s]
            gone = [self._users.pop(t)[0] for t in idle]
        for backend in gone:
            backend.close()

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
        with self._lock:
            users = [b for b, _ in self._users.values()]
            self._users.clear()
        for backend in users:
            backend.close()
        if self.shared is not None:
            self.shared.close()
        if self.plans is not None:
            self.plans.close()
