"""A three-node RabbitMQ 4 cluster on 127.0.0.1 for the tests, made of private nodes.

Each node is a private node of ``testbed.rabbitmq`` (its own AMQP and distribution
ports, node name and state directory, in a root's namespaces of its own) with two things in
common with the others, as a cluster needs:

* one ``epmd``, started first in a namespace of its own and named to every node (and to
  their CLI tools) by ``ERL_EPMD_PORT``: a node killed with its namespace does not take the
  cluster's epmd with it, so the survivors still find each other;
* one Erlang cookie, written into every node's ``HOME`` before it starts.

The nodes start at once; nodes 2 and 3 then join node 1 (``rabbitmqctl stop_app``,
``join_cluster <node 1>``, ``start_app``). Every wait is bounded, and ``stop()`` stops every
node and the epmd and removes their directories, however the test ended.

Use (``find_rabbitmq(4)`` gives the install)::

    with RabbitMQCluster(install) as cluster:
        cluster.addresses     # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3", the connector's option
        cluster.url           # node 1's amqp:// URL (user, password, vhost)
        cluster.ports         # the nodes' AMQP ports, node 1 first
        cluster.node_serving("amqp-spark sink")  # the node a client's connection is on
        cluster.kill(cluster.nodes[0])  # kill -9 of node 1's Erlang VM
        cluster.revive_killed()         # node 1 back, on its state: three nodes again
        cluster.nodes[1].url, cluster.nodes[1].ctl("list_queues")  # one node, its rabbitmqctl

``RabbitMQCluster(install, plugins=("rabbitmq_stream",))`` enables plugins on every node; with
``rabbitmq_stream`` each node serves the stream protocol on a port of its own, advertised as
127.0.0.1:that port (``cluster.stream_ports``, ``cluster.stream_url``,
``cluster.nodes[1].stream_url``).

The tests' fixture is ``rabbitmq_cluster`` in ``tests/cluster/conftest.py`` (one cluster a
session).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from testbed.ports import free_port
from testbed.rabbitmq import (
    RabbitMQInstall,
    RabbitMQNode,
    RabbitMQUnavailable,
)

#: Where the root's (and Debian's) epmd is.
_EPMD = "/usr/bin/epmd"
#: How long the whole cluster may take to form.
START_TIMEOUT = 180.0


class ClusterNode(RabbitMQNode):
    """A private node that uses the cluster's epmd and Erlang cookie."""

    def __init__(
        self,
        install: RabbitMQInstall,
        epmd_port: int,
        cookie: str,
        start_timeout: float,
        plugins: Sequence[str] = (),
    ) -> None:
        super().__init__(install, start_timeout=start_timeout, plugins=plugins)
        self.epmd_port = epmd_port  # shared: the node does not start an epmd of its own
        self._cookie = cookie
        self.killed = False

    def _write_config(self) -> None:
        super()._write_config()
        # HOME is the node's directory: the VM and the CLI tools read the cookie there. Erlang
        # refuses a cookie file others may read.
        cookie = self._workdir / ".erlang.cookie"
        cookie.write_text(self._cookie)
        cookie.chmod(0o400)

    def vm_pid(self) -> int:
        """The host PID of this node's Erlang VM: the ``beam.smp`` in the process group the
        node was started in (its own, see ``RabbitMQNode.start``)."""
        if self._process is None:
            raise RabbitMQUnavailable(f"node {self.nodename} is not running")
        group = self._process.pid
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                comm = (entry / "comm").read_text().strip()
                in_group = os.getpgid(int(entry.name)) == group
            except (OSError, ProcessLookupError):
                continue  # ended meanwhile
            if comm == "beam.smp" and in_group:
                return int(entry.name)
        raise RabbitMQUnavailable(f"no Erlang VM of node {self.nodename} is running")

    def kill(self, timeout: float = 30.0) -> None:
        """``kill -9`` of the node's Erlang VM: no goodbye to clients or to the other nodes.
        Returns once the node's processes are gone and its AMQP port refuses connections."""
        os.kill(self.vm_pid(), signal.SIGKILL)
        self.killed = True
        process = self._process
        if process is not None:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def revive(self) -> None:
        """Start the killed node again on its directory: it recovers its state and rejoins
        the cluster by itself (its quorum queue and stream members catch up)."""
        self._boot()
        self.killed = False


class RabbitMQCluster:
    """``size`` nodes of ``install`` forming one cluster; see the module docstring."""

    def __init__(
        self,
        install: RabbitMQInstall,
        size: int = 3,
        start_timeout: float = START_TIMEOUT,
        plugins: Sequence[str] = (),
    ) -> None:
        if size < 1:
            raise ValueError(f"a cluster has at least one node, not {size}")
        self.install = install
        self.start_timeout = start_timeout
        self.epmd_port = free_port()
        cookie = secrets.token_hex(16).upper()
        self.nodes = [
            ClusterNode(install, self.epmd_port, cookie, start_timeout, plugins)
            for _ in range(size)
        ]
        self.startup_seconds: float | None = None
        self._epmd: subprocess.Popen[bytes] | None = None

    @property
    def ports(self) -> list[int]:
        """The nodes' AMQP ports, node 1 first."""
        return [node.port for node in self.nodes]

    @property
    def addresses(self) -> str:
        """Every node as the connector's ``addresses`` option takes them."""
        return ",".join(f"127.0.0.1:{port}" for port in self.ports)

    @property
    def stream_ports(self) -> list[int]:
        """The nodes' stream protocol ports, node 1 first (with ``rabbitmq_stream``)."""
        return [node.stream_port for node in self.nodes]

    @property
    def stream_url(self) -> str:
        """Node 1's ``rabbitmq-stream://`` URI (with ``rabbitmq_stream``)."""
        return self.nodes[0].stream_url

    @property
    def url(self) -> str:
        """Node 1's URL: the user, password and vhost of every node."""
        return self.nodes[0].url

    def alive(self) -> list[ClusterNode]:
        return [node for node in self.nodes if not node.killed]

    def node_serving(self, connection_name: str) -> ClusterNode | None:
        """The live node that serves a client connection whose ``connection_name`` client
        property is ``connection_name`` (the connector names its connections: "amqp-spark
        sink", "amqp-spark stream consumer", ...), None when none does."""
        listed = self.alive()[-1].ctl(
            "list_connections", "port", "client_properties", "--formatter", "json"
        )
        by_port = {node.port: node for node in self.alive()}
        for connection in json.loads(listed):
            properties = {name: value for name, _, value in connection["client_properties"]}
            if properties.get("connection_name") == connection_name:
                return by_port.get(connection["port"])
        return None

    def kill(self, node: ClusterNode) -> None:
        """``kill -9`` of ``node``'s Erlang VM (see ``ClusterNode.kill``)."""
        node.kill()

    def revive_killed(self) -> None:
        """Start every killed node again and wait until the cluster has them all running:
        what a test that killed one does at its end, so the next has the whole cluster."""
        for node in self.nodes:
            if node.killed:
                node.revive()
        self._wait_for_members(time.monotonic() + self.start_timeout)

    def start(self) -> None:
        began = time.monotonic()
        try:
            self._start_epmd()
            self._start_nodes()
            first = self.nodes[0]
            for node in self.nodes[1:]:
                node.ctl("stop_app")
                node.ctl("join_cluster", first.nodename)
                node.ctl("start_app")
            self._wait_for_members(began + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def _start_epmd(self) -> None:
        """The cluster's epmd, in the foreground in namespaces of its own."""
        env = self.install.base_environment()
        env["ERL_EPMD_ADDRESS"] = "127.0.0.1"
        self._epmd = subprocess.Popen(
            self.install.command(_EPMD, "-port", str(self.epmd_port)),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._epmd.poll() is not None:
                raise RabbitMQUnavailable(f"epmd exited with code {self._epmd.returncode}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.epmd_port), timeout=1),
            ):
                return
            time.sleep(0.1)
        raise RabbitMQUnavailable(f"epmd did not listen on 127.0.0.1:{self.epmd_port} in 30 s")

    def _start_nodes(self) -> None:
        """Start every node at once (their boots are mostly waiting)."""
        errors: list[BaseException] = []

        def start(node: ClusterNode) -> None:
            try:
                node.start()
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=start, args=(node,)) for node in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]

    def _wait_for_members(self, deadline: float) -> None:
        """Until every node answers (AMQP, and its stream port with the plugin) and node 1
        lists every node as running."""
        expected = {node.nodename for node in self.nodes}
        running: set[str] = set()
        while time.monotonic() < deadline:
            if all(node.answers() for node in self.nodes):
                with contextlib.suppress(subprocess.SubprocessError):
                    status = self.nodes[0].ctl("cluster_status", "--formatter", "json")
                    running = set(_running_nodes(status))
                if running == expected:
                    return
            time.sleep(0.5)
        raise RabbitMQUnavailable(
            f"the cluster did not form within {self.start_timeout} s: running {sorted(running)}"
            f", expected {sorted(expected)}"
        )

    def stop(self) -> None:
        """Stop every node (those killed are only cleaned up), then the epmd. Idempotent."""
        threads = [threading.Thread(target=node.stop) for node in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        epmd, self._epmd = self._epmd, None
        if epmd is not None and epmd.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(epmd.pid, signal.SIGKILL)
            epmd.wait(timeout=10)

    def __enter__(self) -> RabbitMQCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _running_nodes(status_json: str) -> list[str]:
    return list(json.loads(status_json).get("running_nodes", []))
