"""The node resources: /api/nodes, the overview's node figures and the health checks."""

from __future__ import annotations

import os

from broker import Broker
from tests.management.conftest import Api


def test_nodes_report_memory_disk_and_file_descriptors(broker: Broker, api: Api) -> None:
    (node,) = api.get("/api/nodes")
    assert node["running"] and node["os_pid"] == str(os.getpid())
    assert node["fd_total"] == broker.server.open_files_limit
    assert 0 < node["fd_used"] < node["fd_total"]
    assert node["mem_used"] > 0 and node["mem_limit"] == broker.server.memory.high
    assert node["mem_alarm"] is False and node["disk_free_alarm"] is False
    assert api.get(f"/api/nodes/{node['name']}")["name"] == node["name"]
    overview = api.get("/api/overview")
    assert overview["fd_total"] == node["fd_total"]


def test_health_checks_answer_ok_or_503_naming_what_is_missing(broker: Broker, api: Api) -> None:
    assert api.get("/api/health/checks/alarms") == {"status": "ok"}
    assert api.get(f"/api/health/checks/port-listener/{broker.port}")["status"] == "ok"
    assert api.get("/api/health/checks/protocol-listener/amqp091")["status"] == "ok"
    status, body = api.call("GET", "/api/health/checks/port-listener/1")
    assert status == 503 and body["status"] == "failed" and body["missing"] == "1"
    assert api.get("/api/aliveness-test/%2F") == {"status": "ok"}
    assert api.call("GET", "/api/aliveness-test/nowhere")[0] == 404
