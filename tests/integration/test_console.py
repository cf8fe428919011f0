"""``mafka console`` against a live 3-broker cluster, driven through headless Chromium (selenium).

One console process for the module (``python -m mafka.cli.main console`` on a free port,
sampling every second), one browser.  The tests load every page, watch a created topic
appear with its ISR, watch a paused consumer's lag grow on the group page's chart, check
that a hostile record value renders as text, and perform one action of each kind through
its confirmation page.  Every page visited is saved as a screenshot under the test's
``tmp_path``; with ``MAFKA_CONSOLE_SCREENSHOTS=1`` the group page also goes to
``docs/images/console-group.png``.  Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from mafka.client import AdminClient, Consumer, Producer
from mafka.client.admin import ConfigResource, ConsumerGroupTopicPartitions, NewTopic
from mafka.client.message import TopicPartition
from tests.harness.cluster import ClusterSpec, LocalCluster, free_ports
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

#: shared: every broker stays up; its topics and groups are named console-<uuid>, used by no other module
CLUSTER = ClusterSpec()

REPO = Path(__file__).resolve().parents[2]
EVIL = "<script>alert(1)</script>"
WAIT_S = 30.0


def unique(prefix: str) -> str:
    return f"console-{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def console(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The console's base URL; the process is stopped with SIGTERM afterwards (and must exit 0)."""
    port = free_ports(1)[0]
    log = open(tmp_path_factory.mktemp("console") / "console.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mafka.cli.main", "console", "--bootstrap-server", cluster.bootstrap,
         "--port", str(port), "--sample-interval", "1", "--timeout", "10",
         "--cluster-json", str(cluster.directory / "cluster.json")],
        stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    assert proc.stdout is not None
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(30)
    try:
        assert first == [f"console: http://127.0.0.1:{port}/\n"], (first, log.name)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise
        log.close()
    assert code == 0, Path(log.name).read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as a:
        yield a


def create_topic(admin: AdminClient, name: str, partitions: int = 2) -> None:
    admin.create_topics([NewTopic(name, partitions, 3)], operation_timeout=20)[name].result(30)


def produce(cluster: LocalCluster, topic: str, values: list[bytes], partition: int = 0,
            headers: list[tuple[str, bytes]] | None = None, **delay: int) -> list[int]:
    """Produces ``values`` to one partition (acks=all); their acknowledged offsets."""
    offsets: list[int] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for v in values:
        p.produce(topic, v, key=b"k", partition=partition, headers=headers,
                  on_delivery=lambda err, msg: offsets.append(-1 if err else msg.offset()), **delay)
    assert p.flush(30) == 0
    assert -1 not in offsets
    return offsets


def read(consumer: Consumer, n: int) -> None:
    """Polls until ``n`` records have come (bounded)."""
    got: list[Any] = []

    def more() -> bool:
        got.extend(m for m in consumer.consume(n, 0.5) if not m.error())
        return len(got) >= n

    wait_until(more, WAIT_S, f"the consumer reading {n} records")


def visit(driver: WebDriver, url: str, shots: Path, name: str) -> None:
    driver.get(url)
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "nav"))
    driver.save_screenshot(str(shots / f"{name}.png"))


def no_error(driver: WebDriver) -> None:
    errors = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "div.error")]
    assert not errors, errors


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=WAIT_S) as r:
        return json.load(r)


def test_every_page_loads(console: str, browser: WebDriver, cluster: LocalCluster, tmp_path: Path) -> None:
    visit(browser, console + "/", tmp_path, "home")
    assert browser.current_url.endswith("/brokers")
    links = [(a.get_attribute("id"), a.get_attribute("href")) for a in browser.find_elements(By.CSS_SELECTOR, "#nav a")]
    assert [i for i, _ in links] == ["nav-brokers", "nav-topics", "nav-groups", "nav-transactions", "nav-rebalancer",
                                     "nav-messages", "nav-actions"]
    for link_id, href in links:
        assert link_id is not None and href is not None
        visit(browser, href, tmp_path, link_id.removeprefix("nav-"))
        no_error(browser)
        assert browser.find_element(By.TAG_NAME, "h1").text
    visit(browser, console + "/brokers", tmp_path, "brokers")
    rows = browser.find_elements(By.CSS_SELECTOR, "#brokers tr.broker")
    assert [r.get_attribute("data-broker") for r in rows] == ["1", "2", "3"]
    assert all("up" in (r.get_attribute("class") or "").split() for r in rows)
    assert len([r for r in rows if r.find_element(By.CLASS_NAME, "controller").text == "controller"]) == 1
    if all("metrics" in b for b in cluster.info["brokers"]):
        # the endpoints of cluster.json are scraped: every broker's slow flag is known
        wait_until(lambda: all(r.find_element(By.CLASS_NAME, "slow").text in ("no", "slow")
                               for r in reload_rows(browser)), WAIT_S, "the brokers' slow flags")


def reload_rows(driver: WebDriver) -> list[Any]:
    driver.refresh()
    return driver.find_elements(By.CSS_SELECTOR, "#brokers tr.broker")


def test_a_created_topic_appears_with_its_isr(console: str, browser: WebDriver, admin: AdminClient,
                                              tmp_path: Path) -> None:
    topic = unique("isr")
    create_topic(admin, topic, partitions=3)
    visit(browser, console + "/topics", tmp_path, "topics")
    row = browser.find_element(By.CSS_SELECTOR, f'tr.topic[data-topic="{topic}"]')
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")[1:4]] == ["3", "3", "0"]
    row.find_element(By.LINK_TEXT, topic).click()
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.ID, "partitions"))
    browser.save_screenshot(str(tmp_path / "topic.png"))
    assert browser.find_element(By.ID, "topic-name").text == topic
    isrs = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#partitions td.isr")]
    assert len(isrs) == 3 and all(sorted(i.split(",")) == ["1", "2", "3"] for i in isrs), isrs


def test_a_paused_consumers_lag_grows_on_the_group_page(console: str, browser: WebDriver, admin: AdminClient,
                                                         cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = unique("lag"), unique("group")
    create_topic(admin, topic, partitions=1)
    produce(cluster, topic, [b"before-%d" % i for i in range(10)])
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        read(consumer, 10)
        consumer.commit(asynchronous=False)
        consumer.pause(consumer.assignment())
        lag_url = f"{console}/api/lag?group={group}"
        wait_until(lambda: (pts := get_json(lag_url)["points"]) and pts[-1]["total"] == 0, WAIT_S,
                   "a lag sample of 0 after the commit")
        visit(browser, f"{console}/group?id={group}", tmp_path, "group-before")
        assert browser.find_element(By.ID, "total-lag").text == "0"
        produce(cluster, topic, [b"after-%d" % i for i in range(25)])
        wait_until(lambda: get_json(lag_url)["points"][-1]["total"] == 25, WAIT_S, "the sampled lag growing to 25")
        chart = browser.find_element(By.ID, "lag-chart")
        # the page's script redraws from the same JSON: the chart grows without a reload
        wait_until(lambda: chart.get_attribute("data-latest-total") == "25", WAIT_S, "the chart showing lag 25")
        assert browser.find_elements(By.CSS_SELECTOR, "#lag-svg polyline.total")
        points = get_json(lag_url)["points"]
        assert points[0]["total"] == 0 and max(p["total"] for p in points) == 25
        visit(browser, f"{console}/group?id={group}", tmp_path, "group")
        assert browser.find_element(By.ID, "total-lag").text == "25"
        assert browser.find_element(By.CSS_SELECTOR, f'tr[data-tp="{topic}-0"] td.lag').text == "25"
        assert browser.find_element(By.ID, "group-state").text == "Stable"
        wait_until(lambda: int(chart_now(browser)) >= 2, WAIT_S, "the chart drawn from at least two samples")
        browser.save_screenshot(str(tmp_path / "group.png"))
        if os.environ.get("MAFKA_CONSOLE_SCREENSHOTS") == "1":
            target = REPO / "docs" / "images" / "console-group.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(target))
    finally:
        consumer.close()


def chart_now(driver: WebDriver) -> str:
    return driver.find_element(By.ID, "lag-chart").get_attribute("data-samples") or "0"


def test_a_script_value_renders_as_text(console: str, browser: WebDriver, admin: AdminClient,
                                        cluster: LocalCluster, tmp_path: Path) -> None:
    topic = unique("xss")
    create_topic(admin, topic, partitions=1)
    (offset,) = produce(cluster, topic, [EVIL.encode()], headers=[("h", EVIL.encode())])
    visit(browser, f"{console}/messages?topic={topic}&partition=0&offset={offset}", tmp_path, "messages")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - the property raises when no alert is open
    assert browser.find_element(By.CSS_SELECTOR, "article.record .value pre").text == EVIL
    source = browser.page_source
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in source
    assert EVIL not in source
    # the other formats too
    Select(browser.find_element(By.ID, "browse-format")).select_by_value("hex")
    WebDriverWait(browser, WAIT_S).until(lambda d: "format=hex" in d.current_url)
    assert "3c 73 63 72 69 70 74 3e" in browser.find_element(By.CSS_SELECTOR, "article.record .value pre").text


def act(driver: WebDriver, console: str, kind: str, fields: dict[str, str], shots: Path,
        expect_rows: bool = False) -> str:
    """Fills the action's form, reviews it, confirms it; returns the confirm page's text."""
    visit(driver, f"{console}/actions", shots, f"actions-{kind}")
    form = driver.find_element(By.ID, f"form-{kind}")
    for name, value in fields.items():
        element = form.find_element(By.NAME, name)
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        else:
            element.clear()
            element.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "confirm-title"))
    driver.save_screenshot(str(shots / f"confirm-{kind}.png"))
    assert not driver.find_elements(By.ID, "blocked"), driver.find_element(By.ID, "blocked").text
    planned = driver.find_element(By.TAG_NAME, "main").text
    if expect_rows:
        assert driver.find_elements(By.CSS_SELECTOR, "#plan-table tbody tr")
    driver.find_element(By.ID, "confirm-button").click()
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "outcome"))
    driver.save_screenshot(str(shots / f"result-{kind}.png"))
    outcome = driver.find_element(By.ID, "outcome")
    assert outcome.get_attribute("class") == "ok", driver.find_element(By.ID, "results").text
    return planned


def test_one_action_of_each_kind_through_its_confirmation(console: str, browser: WebDriver, admin: AdminClient,
                                                          cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = unique("act"), unique("reset")

    planned = act(browser, console, "create-topic", {"topic": topic, "partitions": "2", "replication_factor": "3"},
                  tmp_path)
    assert f"Create topic '{topic}' with 2 partition(s), replication factor 3." in planned
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 2

    act(browser, console, "add-partitions", {"topic": topic, "partitions": "3"}, tmp_path)
    wait_until(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3, WAIT_S,
               "the third partition")

    planned = act(browser, console, "alter-config", {"topic": topic, "name": "retention.ms", "value": "3600000"},
                  tmp_path)
    assert "→ 3600000" in planned

    def retention() -> str | None:
        resource = ConfigResource("topic", topic)
        return admin.describe_configs([resource])[resource].result(10)["retention.ms"].value

    wait_until(lambda: retention() == "3600000", WAIT_S, "retention.ms altered")

    # a group with committed offsets and no members: 5 records read and committed on partition 0
    produce(cluster, topic, [b"r%d" % i for i in range(5)], partition=0)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read(consumer, 5)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    planned = act(browser, console, "reset-offsets", {"group": group, "topic": "", "strategy": "to-earliest"},
                  tmp_path, expect_rows=True)
    # the dry run showed old → new (committed 5 → log start 0); the result commits exactly that
    assert "dry run shown" in planned and f"{group} {topic} 0 5 0" in planned, planned
    done = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
            for r in browser.find_elements(By.CSS_SELECTOR, "#results tbody tr")]
    assert done == [[f"{topic}-0 → 0", "NONE"]], done

    def committed() -> dict[int, int]:
        found = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
        return {tp.partition: tp.offset for tp in found.topic_partitions or []}

    assert committed() == {0: 0}

    act(browser, console, "elect-leaders", {"topic": topic, "partition": ""}, tmp_path, expect_rows=True)
    results = [r.find_element(By.CLASS_NAME, "error-name").text
               for r in browser.find_elements(By.CSS_SELECTOR, "#results tbody tr")]
    assert len(results) == 3 and set(results) <= {"NONE", "ELECTION_NOT_NEEDED"}, results

    (delayed_at,) = produce(cluster, topic, [b"later"], partition=1, delay_ms=600_000)
    visit(browser, f"{console}/topic?name={topic}", tmp_path, "topic-delayed")
    assert browser.find_element(By.CSS_SELECTOR, 'tr[data-partition="1"] td.delayed').text == "1"
    act(browser, console, "cancel-delayed", {"topic": topic, "partition": "1", "offset": str(delayed_at)}, tmp_path)

    def pending() -> str:
        browser.get(f"{console}/topic?name={topic}")
        return browser.find_element(By.CSS_SELECTOR, 'tr[data-partition="1"] td.delayed').text

    wait_until(lambda: pending() == "0", WAIT_S, "the delayed message cancelled")


def test_a_post_without_the_csrf_token_is_refused(console: str, admin: AdminClient) -> None:
    topic = unique("csrf")
    request = urllib.request.Request(f"{console}/actions/create-topic", data=f"topic={topic}".encode(), method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=WAIT_S)
    assert refused.value.code == 403
    assert topic not in admin.list_topics(timeout=10).topics
    page = urllib.request.urlopen(f"{console}/topics", timeout=WAIT_S)
    assert page.headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'self'")
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert re.search(r"<script(?![^>]*\bsrc=)", page.read().decode()) is None
