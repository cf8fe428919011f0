"""What keeps the console's changes deliberate: CSRF tokens, confirmation tokens, response headers.

* Each browser session holds a random CSRF secret (in Flask's signed session cookie,
  ``HttpOnly``, ``SameSite=Strict``); every form carries it and every POST must send it
  back (:func:`csrf_ok`), else 403.  No GET changes anything.
* A planned action waits in :class:`ConfirmStore` under a random, single-use confirmation
  token bound to the session that planned it, for :data:`CONFIRM_TTL_S` seconds; only a POST
  of that token (with the CSRF token) from that session carries it out.
* :data:`SECURITY_HEADERS` go on every response: a Content-Security-Policy that allows
  scripts, styles and fetches from the console itself only (no inline script, no inline
  style, no framing), ``X-Content-Type-Options: nosniff`` and friends.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from typing import Any

__all__ = ["ConfirmStore", "CONFIRM_TTL_S", "SECURITY_HEADERS", "csrf_ok", "new_token"]

CONFIRM_TTL_S = 300.0

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(expected: str | None, given: str | None) -> bool:
    """Whether a POST's token matches the session's (constant time; a missing one never does)."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


class ConfirmStore:
    """Planned actions awaiting confirmation, by single-use token (see the module docstring)."""

    def __init__(self, ttl_s: float = CONFIRM_TTL_S, max_pending: int = 1000) -> None:
        self.ttl_s = ttl_s
        self.max_pending = max_pending
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, float, Any]] = {}

    def put(self, session_key: str, plan: Any) -> str:
        """Keeps ``plan`` for the session ``session_key``; returns its confirmation token."""
        token = new_token()
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            while len(self._pending) >= self.max_pending:
                self._pending.pop(next(iter(self._pending)))  # the oldest
            self._pending[token] = (session_key, now + self.ttl_s, plan)
        return token

    def take(self, session_key: str, token: str) -> Any | None:
        """The plan of ``token`` if it was planned by this session and has not expired (it is
        removed either way: a token confirms once)."""
        with self._lock:
            self._expire(time.monotonic())
            entry = self._pending.get(token)
            if entry is None or not hmac.compare_digest(entry[0].encode(), session_key.encode()):
                return None
            del self._pending[token]
            return entry[2]

    def _expire(self, now: float) -> None:
        for token in [t for t, (_, until, _) in self._pending.items() if until < now]:
            del self._pending[token]
