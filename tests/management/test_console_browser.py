"""The web console in a real browser (Debian's chromium, headless, installed by
scripts/install-apt-tool.sh): log in, then the overview, queues, a queue's page (get and
publish), connections (close one), users, policies (add, delete, shown on the queue's
page) and definitions, each saved as a screenshot under
``$AMQP_SPARK_ARTIFACTS/console`` (default ``test-artifacts/console``)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pika
import pytest

from broker import Broker
from tests.management.browser import Chromium, chromium_path
from tests.management.conftest import Api
from tests.support.fixtures import in_ci

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("AMQP_SPARK_ARTIFACTS", REPO / "test-artifacts")) / "console"


def _text(selector: str) -> str:
    return f"document.querySelector({json.dumps(selector)})?.textContent"


async def _drive(broker: Broker, api: Api) -> None:
    browser = Chromium()
    await browser.start()
    try:
        await browser.navigate(broker.management_url)
        await browser.wait_for("document.getElementById('login')?.hidden === false")
        await browser.screenshot(ARTIFACTS / "0-login.png")
        await browser.evaluate(
            "document.querySelector('#login [name=password]').value = 'guest';"
            "document.querySelector('#login button').click(); true"
        )
        await browser.wait_for(f"{_text('#total-queues')} === '2'")
        assert await browser.evaluate(_text("#who")) == "guest (administrator)"
        assert await browser.evaluate(_text("#total-messages")) == "3"
        await browser.screenshot(ARTIFACTS / "1-overview.png")

        await browser.evaluate("location.hash = '#queues'; true")
        await browser.wait_for("document.body.innerText.includes('orders')")
        await browser.screenshot(ARTIFACTS / "2-queues.png")

        await browser.evaluate("location.hash = '#queue/%2F/orders'; true")
        await browser.wait_for("!!document.getElementById('get')")
        await browser.evaluate(
            "document.querySelector('#get [name=count]').value = '2';"
            "document.querySelector('#get button').click(); true"
        )
        got = await browser.wait_for(f"!document.getElementById('got')?.hidden && {_text('#got')}")
        assert [m["payload"] for m in json.loads(got)] == ["order 0", "order 1"]
        await browser.evaluate(
            "document.querySelector('#publish [name=payload]').value = 'from the console';"
            "document.querySelector('#publish button').click(); true"
        )
        await browser.wait_for(f"{_text('#publish .result')} === 'published'")
        assert api.get("/api/queues/%2F/orders")["messages"] == 4
        await browser.screenshot(ARTIFACTS / "3-queue.png")

        await browser.evaluate("location.hash = '#exchanges'; true")
        await browser.wait_for("document.body.innerText.includes('amq.topic')")
        await browser.screenshot(ARTIFACTS / "3b-exchanges.png")

        await browser.evaluate("location.hash = '#connections'; true")
        await browser.wait_for("!!document.querySelector('button.close')")
        await browser.screenshot(ARTIFACTS / "4-connections.png")
        await browser.evaluate("document.querySelector('button.close').click(); true")
        deadline = time.monotonic() + 10
        while api.get("/api/connections"):
            assert time.monotonic() < deadline, "the connection was not closed"
            await asyncio.sleep(0.1)

        await browser.evaluate("location.hash = '#users'; true")
        await browser.wait_for("document.body.innerText.includes('administrator')")
        await browser.screenshot(ARTIFACTS / "5-users.png")

        await _policies(browser, api)
        await browser.evaluate("location.hash = '#definitions'; true")
        await browser.wait_for("!!document.getElementById('import')")
        await browser.screenshot(ARTIFACTS / "6-definitions.png")
    finally:
        await browser.stop()


def _fill(form: str, values: dict[str, str]) -> str:
    """Script that fills the console's form ``form`` with ``values`` and submits it."""
    sets = "".join(
        f"document.querySelector('#{form} [name={name}]').value = {json.dumps(value)};"
        for name, value in values.items()
    )
    return sets + f"document.querySelector('#{form} button').click(); true"


async def _policies(browser: Chromium, api: Api) -> None:
    """The Policies page: add a policy and an operator policy with its forms, see them
    listed and on the queue's page, delete the policy with its button."""
    await browser.evaluate("location.hash = '#policies'; true")
    await browser.wait_for("!!document.getElementById('add-policy')")
    policy = {"name": "orders-cap", "pattern": "^orders$", "definition": '{"max-length": 10}'}
    await browser.evaluate(_fill("add-policy", policy))
    await browser.wait_for(f"{_text('#add-policy .result')} === 'done'")
    operator = {"name": "ops-cap", "pattern": "^orders", "definition": '{"max-length": 8}'}
    await browser.evaluate(_fill("add-operator-policy", operator))
    await browser.wait_for(f"{_text('#add-operator-policy .result')} === 'done'")
    await browser.wait_for("document.body.innerText.includes('ops-cap')")
    assert api.get("/api/policies/%2F/orders-cap")["apply-to"] == "queues"
    await browser.screenshot(ARTIFACTS / "5b-policies.png")
    await browser.evaluate("location.hash = '#queue/%2F/orders'; true")
    effective = '{"max-length":8}'
    await browser.wait_for(f"document.body.innerText.includes({json.dumps(effective)})")
    text = await browser.evaluate("document.body.innerText")
    assert "orders-cap" in text and "ops-cap" in text
    await browser.screenshot(ARTIFACTS / "5c-queue-policy.png")
    await browser.evaluate("location.hash = '#policies'; true")
    await browser.wait_for("!!document.querySelector('button.delete-policy')")
    await browser.evaluate("document.querySelector('button.delete-policy').click(); true")
    deadline = time.monotonic() + 10
    while api.get("/api/policies"):
        assert time.monotonic() < deadline, "the policy was not deleted"
        await asyncio.sleep(0.1)
    assert api.get("/api/queues/%2F/orders")["policy"] is None


def test_the_console_shows_and_steers_the_broker_in_chromium(broker: Broker, api: Api) -> None:
    if chromium_path() is None:
        reason = "chromium is missing (scripts/install-apt-tool.sh installs it)"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    ch = conn.channel()
    ch.queue_declare("orders")
    ch.queue_declare("audit")
    for i in range(3):
        ch.basic_publish("", "orders", f"order {i}".encode())
    ch.basic_consume("audit", lambda *a: None, consumer_tag="auditor")
    asyncio.run(_drive(broker, api))
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker, match="management plugin"):
        conn.process_data_events(time_limit=1)
    shots: list[Any] = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert shots == [
        "0-login.png",
        "1-overview.png",
        "2-queues.png",
        "3-queue.png",
        "3b-exchanges.png",
        "4-connections.png",
        "5-users.png",
        "5b-policies.png",
        "5c-queue-policy.png",
        "6-definitions.png",
    ]
