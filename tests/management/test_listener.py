"""The management listener: where it listens, how it is turned off, what a taken port does."""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from broker import Broker, cli
from broker.config import BrokerConfig
from broker.management import ManagementPortError
from tests.management.conftest import Api
from tests.security.certs import CertificateAuthority


def test_in_process_broker_serves_the_api_on_an_ephemeral_port(broker: Broker, api: Api) -> None:
    assert broker.management_url.startswith("http://127.0.0.1:")
    assert not broker.management_url.endswith(":15672/")
    overview = api.get("/api/overview")
    assert overview["object_totals"]["exchanges"] == 6  # "" and the five amq.* ones
    listeners = {entry["protocol"]: entry["port"] for entry in overview["listeners"]}
    assert listeners["amqp"] == broker.port
    assert f":{listeners['http']}/" in broker.management_url


def test_management_can_be_turned_off_in_the_config() -> None:
    with (
        Broker(config={"management": {"enabled": False}}) as b,
        pytest.raises(RuntimeError, match="no management listener"),
    ):
        _ = b.management_url


def test_a_taken_port_fails_the_start_naming_the_flag() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ManagementPortError, match="--management-port"):
            Broker(management_port=port).start()


def test_the_program_stops_with_an_error_naming_the_flag_when_the_port_is_taken(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["--in-memory", "--port", "0", "--stream-port", "0", "--management-port", str(port)]
        with pytest.raises(SystemExit) as exit_info:
            cli.main(args)
    message = str(exit_info.value.code)
    assert "--management-port" in message and str(port) in message


def test_the_toml_section_sets_host_and_port() -> None:
    config = BrokerConfig.from_dict({"management": {"host": "::1", "port": 15999}})
    assert (config.management.host, config.management.port) == ("::1", 15999)
    assert config.management.enabled


def test_with_a_tls_section_the_listener_speaks_https(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("localhost", server=True)
    tls = {"certfile": str(server.cert), "keyfile": str(server.key)}
    with Broker(config={"management": {"tls": tls}}) as b:
        assert b.management_url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cafile=str(ca.cert))
        context.check_hostname = False
        token = base64.b64encode(b"guest:guest").decode()
        request = urllib.request.Request(
            b.management_url + "api/whoami", headers={"Authorization": f"Basic {token}"}
        )
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            assert json.loads(response.read())["name"] == "guest"
        plain = b.management_url.replace("https://", "http://") + "api/whoami"
        with pytest.raises(OSError):
            urllib.request.urlopen(plain, timeout=10)


def test_the_program_logs_its_management_url_and_ctl_reaches_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = [sys.executable, "-m", "broker", "--in-memory", "--port", "0", "--stream-port", "0"]
    proc = subprocess.Popen([*command, "--management-port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line, "the broker exited before serving"
            found = re.search(r"management API, console and /metrics on (http://\S+)", line)
            url = found.group(1) if found else None
        assert url is not None
        assert cli.main(["ctl", "--url", url, "status"]) == 0
        assert "amqp: 127.0.0.1:" in capsys.readouterr().out
    finally:
        proc.terminate()
        proc.wait(10)
