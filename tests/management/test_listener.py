"""The management listener: where it listens, how it is turned off, what a taken port does."""

from __future__ import annotations

import socket

import pytest

from broker import Broker, cli
from broker.config import BrokerConfig
from broker.management import ManagementPortError
from tests.management.conftest import Api


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
        args = ["--in-memory", "--port", "0", "--management-port", str(port)]
        with pytest.raises(SystemExit) as exit_info:
            cli.main(args)
    message = str(exit_info.value.code)
    assert "--management-port" in message and str(port) in message


def test_the_toml_section_sets_host_and_port() -> None:
    config = BrokerConfig.from_dict({"management": {"host": "::1", "port": 15999}})
    assert (config.management.host, config.management.port) == ("::1", 15999)
    assert config.management.enabled
