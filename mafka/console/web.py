"""The console's Flask application: server-rendered pages, one JSON endpoint, the action forms.

Pages (GET; none changes anything): ``/brokers``, ``/topics``, ``/topic?name=``,
``/groups``, ``/group?id=``, ``/transactions``, ``/rebalancer``, ``/messages`` (the
browser), ``/actions`` (the forms, prefilled from the query), ``/login``.  Names travel
in the query string, never in the path, so any topic or group name (``/``, ``?``,
``..``) reaches the console intact.  ``/api/lag?group=`` is the lag chart's JSON.

Changes (POST, each with the session's CSRF token, else 403): ``/actions/<kind>`` plans
an action and shows the confirmation page; ``/confirm`` carries out a confirmed plan (see
:mod:`mafka.console.actions` and :mod:`mafka.console.guard`); ``/login``, ``/logout``.

Every string shown comes from the cluster or a record and may be hostile: Jinja's
autoescape is on for every template, nothing is marked safe, and the chart's data is JSON
fetched by the static script.  A failed cluster call renders as Kafka's error name (status
404 for an unknown topic or group, 503 when the cluster did not answer, else 502); an
unexpected failure is logged with its traceback and shown as ``UNKNOWN_SERVER_ERROR``
without one.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterable
from typing import Any

from flask import (
    Flask,
    Response,
    abort,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from werkzeug.exceptions import HTTPException

from .actions import KINDS, RESET_STRATEGIES, FormError
from .browse import DEFAULT_COUNT, MAX_COUNT, parse_request
from .errors import ConsoleError
from .guard import SECURITY_HEADERS, ConfirmStore, csrf_ok, new_token
from .rebalancer_plan import age as clock_time
from .records import FORMATS, SHOW_LIMIT, utc
from .service import Backend, Console

__all__ = ["create_app", "NAV"]

log = logging.getLogger(__name__)

#: the nav bar: (endpoint, label)
NAV = (
    ("brokers", "Brokers"),
    ("topics", "Topics"),
    ("groups", "Consumer groups"),
    ("transactions", "Transactions"),
    ("rebalancer", "Rebalancer"),
    ("messages", "Messages"),
    ("actions", "Actions"),
)

_NOT_FOUND = ("UNKNOWN_TOPIC_OR_PARTITION", "GROUP_ID_NOT_FOUND")
_UNREACHABLE = ("_TRANSPORT", "_TIMED_OUT", "_AUTHENTICATION", "REQUEST_TIMED_OUT")
_OPEN_ENDPOINTS = ("login", "static")
#: how long a user's right to see a group's lag history is remembered (login mode)
_GROUP_CHECK_S = 30.0


def fmt_bytes(n: int | float | None) -> str:
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def fmt_duration(ms: int | None) -> str:
    if ms is None:
        return "—"
    seconds = ms // 1000
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def fmt_optional(value: Any) -> str:
    return "—" if value is None else str(value)


def _csv(values: Iterable[Any]) -> str:
    return ",".join(str(v) for v in values)


def create_app(console: Console, secret_key: bytes | None = None,
               trusted_hosts: list[str] | None = None) -> Flask:
    """The console's WSGI application over ``console``'s backends.

    ``secret_key`` signs the session cookie (a random one per process by default: a
    restart logs everybody out and voids every form); ``trusted_hosts`` limits the
    ``Host`` headers answered (a loopback console refuses a rebound DNS name).
    """
    app = Flask("mafka.console", template_folder="templates", static_folder="static")
    app.secret_key = secret_key or secrets.token_bytes(32)
    app.config.update(
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_NAME="mafka_console",
        MAX_CONTENT_LENGTH=1024 * 1024,
        TRUSTED_HOSTS=trusted_hosts,
    )
    app.jinja_env.autoescape = True
    app.jinja_env.filters.update(bytes=fmt_bytes, duration=fmt_duration, opt=fmt_optional, utc=utc, csv=_csv)
    store = ConfirmStore()
    group_checks: dict[tuple[str, str], float] = {}
    checks_lock = threading.Lock()

    @app.context_processor
    def globals_() -> dict[str, Any]:
        backend = g.get("backend")
        return {
            "nav": NAV,
            "csrf_token": session.get("csrf", ""),
            "login_required": console.login_required,
            "username": backend.username if backend is not None else None,
            "show_limit": SHOW_LIMIT,
        }

    @app.before_request
    def guard() -> Any:
        if "csrf" not in session:
            session["csrf"] = new_token()
        if request.method == "POST" and not csrf_ok(session.get("csrf"), request.form.get("csrf_token")):
            abort(403)
        g.backend = console.backend(session.get("user"))
        if g.backend is None and request.endpoint not in _OPEN_ENDPOINTS:
            if request.method == "GET" and not request.path.startswith("/api/"):
                return redirect(url_for("login", next=request.full_path))
            abort(401)
        return None

    @app.after_request
    def headers(response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            if name == "Cache-Control" and request.endpoint == "static":
                continue
            response.headers.setdefault(name, value)
        return response

    @app.errorhandler(ConsoleError)
    def cluster_error(exc: ConsoleError) -> tuple[str, int]:
        status = 404 if exc.name in _NOT_FOUND else 503 if exc.name in _UNREACHABLE else 502
        return render_template("error.html", name=exc.name, detail=exc.detail), status

    def error_page(name: str, detail: str, code: int) -> Response:
        try:
            return Response(render_template("error.html", name=name, detail=detail), code)
        except Exception:  # noqa: BLE001 - no page to render into (a refused Host header): plain text
            return Response(f"{name}: {detail}\n", code, mimetype="text/plain")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        return error_page(f"HTTP {code}", exc.description or exc.name, code)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("console: %s %s failed", request.method, request.path)
        return error_page("UNKNOWN_SERVER_ERROR", "the console failed to serve this page; its log has the details",
                          500)

    def backend() -> Backend:
        b: Backend = g.backend
        return b

    # -- pages ---------------------------------------------------------------------------

    @app.get("/")
    def index() -> Any:
        return redirect(url_for("brokers"))

    @app.get("/brokers")
    def brokers() -> str:
        rows, endpoints, cluster_id = backend().reader.brokers()
        return render_template("brokers.html", brokers=rows, endpoints=endpoints, cluster_id=cluster_id,
                               down=[b for b in rows if not b.up])

    @app.get("/topics")
    def topics() -> str:
        rows, notices = backend().reader.topics()
        return render_template("topics.html", topics=rows, notices=notices)

    @app.get("/topic")
    def topic() -> str:
        name = request.args.get("name", "")
        if not name:
            abort(404)
        detail = backend().reader.topic(name)
        return render_template("topic.html", t=detail,
                               non_default=sum(1 for c in detail.configs if not c.is_default))

    @app.get("/groups")
    def groups() -> str:
        rows, notices = backend().reader.groups()
        share = [r for r in rows if r.type == "SHARE"]
        return render_template("groups.html", groups=[r for r in rows if r.type != "SHARE"], share=share,
                               notices=notices)

    @app.get("/group")
    def group() -> str:
        group_id = request.args.get("id", "")
        if not group_id:
            abort(404)
        detail = backend().reader.group(group_id)
        return render_template("group.html", d=detail, sampled=console.sampler is not None)

    @app.get("/api/lag")
    def lag() -> Any:
        group_id = request.args.get("group", "")
        if not group_id:
            abort(404)
        if console.login_required:
            _check_group(group_id)
        if console.sampler is None:
            return jsonify({"group": group_id, "interval_s": None, "note": "the console does not sample lag",
                            "points": []})
        return jsonify(console.sampler.lag_json(group_id))

    def _check_group(group_id: str) -> None:
        """Login mode: the user's own principal must be able to describe the group (the
        history was sampled with the console's)."""
        key = (session.get("user", ""), group_id)
        now = time.monotonic()
        with checks_lock:
            if now - group_checks.get(key, -_GROUP_CHECK_S) < _GROUP_CHECK_S:
                return
        b = backend()
        b.reader.result(b.reader.admin.describe_groups([group_id], request_timeout=b.reader.timeout)[group_id],
                        "DescribeGroups")
        with checks_lock:
            group_checks[key] = now
            for stale in [k for k, at in group_checks.items() if now - at > _GROUP_CHECK_S]:
                del group_checks[stale]

    @app.get("/transactions")
    def transactions() -> str:
        rows, notices, threshold = backend().reader.transactions(console.hanging_after_ms)
        return render_template("transactions.html", rows=rows, notices=notices, threshold=threshold,
                               open_rows=[r for r in rows if r.start_ms is not None],
                               hanging=[r for r in rows if r.hanging])

    @app.get("/rebalancer")
    def rebalancer() -> str:
        reader = backend().reader
        disks, settings = reader.disks()
        try:
            moving, refused = reader.reassignments(), None
        except ConsoleError as exc:
            moving, refused = [], (exc.name, exc.detail)
        plan, plan_error, plan_known = None, None, console.plans is not None
        if console.plans is not None:
            try:
                plan = console.plans.current()
            except Exception as exc:  # noqa: BLE001 - ZooKeeper's trouble is shown, the page still renders
                plan_error = ("ZOOKEEPER_UNAVAILABLE", f"{type(exc).__name__}: {exc}")
        return render_template("rebalancer.html", moving=moving, refused=refused, disks=disks, settings=settings,
                               plan=plan, plan_error=plan_error, plan_known=plan_known, clock=clock_time)

    @app.get("/messages")
    def messages() -> tuple[str, int]:
        b = backend()
        form = {k: request.args.get(k, "") for k in ("topic", "partition", "offset", "timestamp", "count", "format")}
        form["count"] = form["count"] or str(DEFAULT_COUNT)
        form["format"] = form["format"] or "utf8"
        context: dict[str, Any] = {"form": form, "formats": FORMATS, "max_count": MAX_COUNT, "result": None,
                                   "error": None}
        try:
            req = parse_request(request.args)
        except ValueError as exc:
            context["error"] = ("INVALID_REQUEST", str(exc))
            return render_template("messages.html", **context), 400
        if req is not None:
            try:
                context["result"] = b.browser.browse(req)
            except ConsoleError as exc:
                context["error"] = (exc.name, exc.detail)
        return render_template("messages.html", **context), 200

    # -- actions -------------------------------------------------------------------------

    @app.get("/actions")
    def actions() -> str:
        return render_template("actions.html", kinds=KINDS, strategies=RESET_STRATEGIES,
                               prefill=request.args, error=None, failed_kind=None)

    @app.post("/actions/<kind>")
    def plan(kind: str) -> tuple[str, int]:
        if kind not in KINDS:
            abort(404)
        try:
            planned = backend().actions.plan(kind, request.form)
        except (FormError, ConsoleError) as exc:
            error = ("INVALID_REQUEST", str(exc)) if isinstance(exc, FormError) else (exc.name, exc.detail)
            return render_template("actions.html", kinds=KINDS, strategies=RESET_STRATEGIES, prefill=request.form,
                                   error=error, failed_kind=kind), 400
        token = None if planned.blocked else store.put(session["csrf"], planned)
        return render_template("confirm.html", plan=planned, token=token), 200

    @app.post("/confirm")
    def confirm() -> tuple[str, int]:
        planned = store.take(session["csrf"], request.form.get("confirm_token", ""))
        if planned is None:
            return render_template("error.html", name="INVALID_REQUEST",
                                   detail="this confirmation has expired or was used already; nothing was changed"), 400
        outcome = backend().actions.execute(planned)
        return render_template("result.html", outcome=outcome, plan=planned), 200

    # -- login ---------------------------------------------------------------------------

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        if not console.login_required:
            return redirect(url_for("brokers"))
        error = None
        if request.method == "POST":
            username = request.form.get("username", "")
            try:
                token = console.login(username, request.form.get("password", ""))
            except ConsoleError as exc:
                error = (exc.name, exc.detail)
            else:
                console.logout(session.get("user"))
                session.clear()
                session["user"] = token
                session["csrf"] = new_token()
                target = request.args.get("next", "")
                # only a path of this console: never an absolute URL (open redirect)
                if not target.startswith("/") or target.startswith("//") or "\\" in target:
                    target = url_for("brokers")
                return redirect(target)
        return render_template("login.html", error=error), (401 if error else 200)

    @app.post("/logout")
    def logout() -> Any:
        console.logout(session.get("user"))
        session.clear()
        return redirect(url_for("login"))

    return app
