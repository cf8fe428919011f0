"""The web console (``mafka console``): an operator's view of a Kafka cluster, and its common changes.

Pages (server-rendered, one nav bar): brokers, topics and a topic's partitions and
configs, consumer groups with lag per partition and a lag-over-time chart, transactions
(open and hanging ones), the rebalancer's reassignments and disks, a message browser,
and the actions — create a topic, add partitions, alter a topic config, reset a group's
offsets, preferred leader election, cancel a delayed message — each confirmed on a page
that shows exactly what will happen.

It talks to the cluster only through :mod:`mafka.client` (one cached AdminClient, or one
per logged-in user with SASL; consumers for the browser), so it works against Apache
Kafka as well as Mafka.  The modules, each owning one thing:

* :mod:`.cli <mafka.cli.console>` — the command (flags, start, signals);
* :mod:`.server` — Twisted Web's WSGI container, a thread pool of its own;
* :mod:`.web` — the Flask app: routes, CSRF, security headers, error pages;
* :mod:`.guard` — CSRF and confirmation tokens, the headers;
* :mod:`.service` — the backends (admin client, reader, actions, browser) and logins;
* :mod:`.cluster` — reading the cluster for the pages (bounded, a down broker named);
* :mod:`.wire` — the requests AdminClient has no method for, over its own connections;
* :mod:`.actions` — planning and executing the changes;
* :mod:`.browse` and :mod:`.records` — the message browser and how bytes are shown;
* :mod:`.sampler` and :mod:`.metrics` — lag history, rates, the brokers' Prometheus endpoints;
* :mod:`.model` — the records the templates render; ``templates/`` and ``static/``
  (one script for the chart, one stylesheet; nothing from elsewhere).
"""

from __future__ import annotations

from .service import Backend, Console, open_backend
from .web import create_app

__all__ = ["Backend", "Console", "create_app", "open_backend"]
