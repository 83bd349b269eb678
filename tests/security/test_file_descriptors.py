"""The broker's file descriptors (broker/server/descriptors.py): the open-files limit it
raises at start, the connection limit that follows from it, and refusing new connections,
logged once per interval, when descriptors run out. Each broker runs in a child process
under a low limit set by the test; the test process keeps its own."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from amqp_protocol import Connection
from broker.server.descriptors import RefusalLog, connection_limit
from testbed.broker_process import BrokerProcess
from testbed.raw_client import M, call, open_raw


def _limits(b: BrokerProcess) -> tuple[int, int]:
    """The broker's soft and hard RLIMIT_NOFILE, as the kernel reports them."""
    assert b.proc is not None
    for line in Path(f"/proc/{b.proc.pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no 'Max open files' in /proc/<pid>/limits")


def _log(b: BrokerProcess) -> str:
    assert b.log is not None
    return b.log.read_text()


def _wait_for_log(b: BrokerProcess, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in _log(b):
        assert time.monotonic() < deadline, f"no {text!r} in the broker's log"
        time.sleep(0.02)


def _open_when_room(port: int) -> tuple[socket.socket, Connection]:
    """A connection, retried while the broker has not yet seen a closed one go."""
    for _ in range(100):
        try:
            return open_raw(port)
        except OSError:
            time.sleep(0.02)
    raise AssertionError("no connection accepted after one closed")


def _close_all(held: list[tuple[socket.socket, Connection]]) -> None:
    for sock, _ in held:
        sock.close()


def test_the_broker_raises_its_soft_open_files_limit_to_the_hard_limit_and_logs_it(
    tmp_path: Path,
) -> None:
    with BrokerProcess(tmp_path / "data", open_files=(64, 400)) as b:
        assert _limits(b) == (400, 400)
        log = _log(b)
    assert "open files limit 400 (soft limit was 64, hard limit 400)" in log
    assert "(at most 268 connections)" in log  # (400 - 100) * 0.9 - 2


@pytest.mark.parametrize("where", ["command line", "config file"])
def test_a_configured_open_files_limit_is_the_one_the_broker_runs_with(
    tmp_path: Path, where: str
) -> None:
    if where == "command line":
        args = ["--open-files-limit", "300"]
    else:
        config = tmp_path / "broker.toml"
        config.write_text("open_files_limit = 300\n")
        args = ["--config", str(config)]
    with BrokerProcess(tmp_path / "data", *args, open_files=(64, 400)) as b:
        assert _limits(b) == (300, 400)
        log = _log(b)
    assert "open files limit 300 (soft limit was 64, hard limit 400)" in log
    assert "(at most 178 connections)" in log


@pytest.mark.parametrize("wanted", [-1, 1 << 30])  # 2**30 is above any fs.nr_open
def test_an_open_files_limit_that_cannot_be_set_stops_the_broker_naming_it(
    tmp_path: Path, wanted: int
) -> None:
    b = BrokerProcess(tmp_path / "data", "--open-files-limit", str(wanted), open_files=(64, 400))
    with pytest.raises(RuntimeError, match="the broker exited"):
        b.start()
    assert b.proc is not None and b.proc.wait(10) == 1
    assert f"amqp-broker: open_files_limit = {wanted}: " in _log(b)


def test_the_connection_limit_follows_rabbitmqs_sockets_limit_and_connection_max() -> None:
    assert connection_limit(1024, 0) == 829  # RabbitMQ's sockets_total at ulimit -n 1024
    assert connection_limit(1024, 100) == 100
    assert connection_limit(1024, 10000) == 829
    assert connection_limit(64, 0) == 1  # always room for one


def test_connections_over_what_the_descriptors_allow_are_dropped_and_logged_once(
    tmp_path: Path,
) -> None:
    limit = 88  # (200 - 100) * 0.9 - 2
    held: list[tuple[socket.socket, Connection]] = []
    with (
        BrokerProcess(tmp_path / "data", open_files=(200, 200)) as b,
        contextlib.ExitStack() as s,
    ):
        s.callback(_close_all, held)
        held.extend(_open_when_room(b.port) for _ in range(limit))
        for _ in range(5):
            with pytest.raises(OSError):
                open_raw(b.port)
        held.pop()[0].close()
        held.append(_open_when_room(b.port))
        sock, conn = held[0]
        assert call(sock, conn, 1, M("channel.open")()).NAME == "channel.open-ok"
        log = _log(b)
    assert log.count(f"refusing new connections: connection limit ({limit}) reached") == 1
    recovered = re.search(r"accepting new connections again, after refusing (\d+) in ", log)
    assert recovered is not None and int(recovered.group(1)) >= 5


def test_out_of_descriptors_new_connections_are_refused_the_open_ones_served_until_recovery(
    tmp_path: Path,
) -> None:
    starved = BrokerProcess(
        tmp_path / "data", program="tests.support.starved_broker", open_files=(256, 256)
    )
    with starved as b:
        assert b.proc is not None
        sock, conn = _open_when_room(b.port)
        with sock:
            call(sock, conn, 1, M("channel.open")())
            os.kill(b.proc.pid, signal.SIGUSR1)
            _wait_for_log(b, "holding ")

            # Each new connection is accepted only to be closed: its client sees the socket
            # close (within asyncio's one-second pause of the listener), not a silent broker.
            clients = [
                socket.create_connection(("127.0.0.1", b.port), timeout=10) for _ in range(20)
            ]
            for client in clients:
                with client, contextlib.suppress(ConnectionResetError):  # closed, or reset
                    assert client.recv(8) == b""
            # The open connection is served throughout.
            ok = call(sock, conn, 1, M("queue.declare")(queue="still-served"))
            assert ok.NAME == "queue.declare-ok"

            os.kill(b.proc.pid, signal.SIGUSR2)
            _wait_for_log(b, "released")
            again, again_conn = open_raw(b.port)
            with again:
                assert call(again, again_conn, 1, M("channel.open")()).NAME == "channel.open-ok"
        log = _log(b)
    refusing = [line for line in log.splitlines() if "refusing new connections" in line]
    assert len(refusing) == 1, refusing
    assert "out of file descriptors (Too many open files, limit 256)" in refusing[0]
    assert "accepting new connections again, after refusing 20 in " in log
    assert "socket.accept() out of system resource" not in log  # asyncio's line per retry


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_refusals_are_logged_once_per_interval_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    refusals = RefusalLog(clock, interval=10.0)
    with caplog.at_level(logging.WARNING, logger="broker"):
        for _ in range(1000):  # a flood within one interval: one line
            refusals.refused("out of file descriptors")
        clock.now += 10.0
        refusals.refused("out of file descriptors", 3)
        clock.now += 1.0
        refusals.refused("out of file descriptors")  # within the interval again: nothing
        clock.now += 4.0
        refusals.accepted()
        refusals.accepted()  # nothing was refused since: nothing to say
    assert [r.getMessage() for r in caplog.records] == [
        "refusing new connections: out of file descriptors; connections already open are "
        "served (reported again every 10 s while this lasts)",
        "still refusing new connections: out of file descriptors (1002 refused in the last 10 s)",
        "accepting new connections again, after refusing 1004 in 15 s: out of file descriptors",
    ]
