"""A real RabbitMQ for the tests: a private node started from the installed server, an
existing server named by ``AMQP_SPARK_RABBITMQ_URL``, or (only when a Docker engine answers
and the optional ``testcontainers`` package is installed) a container.

The private node is isolated from any system RabbitMQ: its own AMQP, distribution and epmd
ports on 127.0.0.1, its own node name, and all state (Mnesia, logs, config, the Erlang
cookie via ``HOME``) in a temporary directory removed on stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

URL_ENV = "AMQP_SPARK_RABBITMQ_URL"

# Debian's /usr/sbin/rabbitmq-server re-runs itself as the ``rabbitmq`` user with the
# system node's directories; the scripts it wraps honour our environment as they are.
_SCRIPT_DIRS = (Path("/usr/lib/rabbitmq/bin"),)
# Sent by a client first; a RabbitMQ that is up answers with a connection.start frame.
_AMQP_0_9_1_HEADER = b"AMQP\x00\x00\x09\x01"
_CONNECTION_START = (1, 0)  # frame type "method" on channel 0 ...
_CONNECTION_START_IDS = b"\x00\x0a\x00\x0a"  # ... class 10 (connection), method 10 (start)


class RabbitMQUnavailable(RuntimeError):
    """No RabbitMQ could be had; the message says why and what to install or set."""


#: The private nodes this process has running, by URL (for ``rabbitmqctl``).
_RUNNING: dict[str, RabbitMQNode] = {}


def rabbitmqctl(url: str, *args: str) -> str:
    """Run ``rabbitmqctl args...`` against the private node serving ``url`` and return its
    output. RabbitMQUnavailable when ``url`` is not a node this process started (a server
    named by the environment or a container): its users cannot be managed from here."""
    node = _RUNNING.get(url)
    if node is None:
        raise RabbitMQUnavailable(f"{url} is not a private node of this test run")
    return node.ctl(*args)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def amqp_handshake(host: str, port: int, timeout: float = 2.0) -> bool:
    """True if an AMQP 0-9-1 server at host:port answers the protocol header with
    connection.start. An open TCP port alone is not enough: RabbitMQ's listener opens
    only at the end of boot, but another program may hold the port."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(_AMQP_0_9_1_HEADER)
            reply = b""
            while len(reply) < 11:
                chunk = s.recv(11 - len(reply))
                if not chunk:
                    return False
                reply += chunk
    except OSError:
        return False
    return (reply[0], int.from_bytes(reply[1:3], "big")) == _CONNECTION_START and (
        reply[7:11] == _CONNECTION_START_IDS
    )


def find_server_scripts() -> Path | None:
    """The directory holding ``rabbitmq-server`` and ``rabbitmqctl`` that can run a node
    with our environment, or None when RabbitMQ is not installed."""
    for directory in _SCRIPT_DIRS:
        if (directory / "rabbitmq-server").is_file():
            return directory
    on_path = shutil.which("rabbitmq-server")
    if on_path and Path(on_path).parent not in (Path("/usr/sbin"), Path("/sbin")):
        return Path(on_path).parent
    return None


class RabbitMQNode:
    """A private RabbitMQ node; use as a context manager or call start() and stop().

    Every wait is bounded: start() gives up after ``start_timeout`` seconds and stop()
    escalates from ``rabbitmqctl stop`` to SIGTERM and SIGKILL of the process group.
    """

    def __init__(self, scripts: Path, start_timeout: float = 90.0) -> None:
        self.scripts = scripts
        self.start_timeout = start_timeout
        self.port = free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.nodename = f"rabbit-test-{self.port}@localhost"
        self.startup_seconds: float | None = None
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    @property
    def log_path(self) -> Path:
        return self._workdir / "server.log"

    @property
    def _workdir(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the node has not been started")
        return self._dir

    def environment(self) -> dict[str, str]:
        """The environment for the server and for the CLI tools that talk to it."""
        d = self._workdir
        env = dict(os.environ)
        env.update(
            HOME=str(d),  # the Erlang cookie is created and read here
            RABBITMQ_NODENAME=self.nodename,
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            ERL_EPMD_ADDRESS="127.0.0.1",
            ERL_EPMD_PORT=str(self.epmd_port),
            RABBITMQ_MNESIA_BASE=str(d / "mnesia"),
            RABBITMQ_LOG_BASE=str(d / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(d / "enabled_plugins"),
            RABBITMQ_CONFIG_FILE=str(d / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(d / "advanced.config"),
            RABBITMQ_CONF_ENV_FILE=str(d / "rabbitmq-env.conf"),
        )
        return env

    def start(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="rabbitmq-test-"))
        (self._dir / "enabled_plugins").write_text("[].\n")
        (self._dir / "rabbitmq-env.conf").write_text("")
        # A test node must not stop accepting publishes because the disk is nearly full.
        (self._dir / "rabbitmq.conf").write_text(
            "disk_free_limit.absolute = 1MB\nlog.console = false\nlog.file.level = info\n"
        )
        began = time.monotonic()
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [str(self.scripts / "rabbitmq-server")],
                cwd=self._dir,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, for stop()
            )
        deadline = began + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._fail(f"exited with code {self._process.returncode} while starting")
            if amqp_handshake("127.0.0.1", self.port):
                self.startup_seconds = time.monotonic() - began
                _RUNNING[self.url] = self
                return
            time.sleep(0.5)
        self._fail(f"did not answer AMQP on 127.0.0.1:{self.port} within {self.start_timeout}s")

    def _fail(self, what: str) -> None:
        tail = self.log_path.read_text(errors="replace")[-3000:]
        self.stop()
        raise RabbitMQUnavailable(f"RabbitMQ node {self.nodename} {what}; its output:\n{tail}")

    def stop(self) -> None:
        """Stop the node and everything it started, remove its directory. Idempotent."""
        if self._dir is None:
            return
        _RUNNING.pop(self.url, None)
        env = self.environment()
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                subprocess.run(
                    [str(self.scripts / "rabbitmqctl"), "-n", self.nodename, "stop"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=30,
                )
            self._end_process_group(process)
        # epmd daemonizes out of our process group. Its port is private to this node, so
        # the epmd there is the one our node started, and no other node is using it.
        if shutil.which("epmd"):
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                subprocess.run(
                    ["epmd", "-port", str(self.epmd_port), "-kill"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                )
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        self._process = None

    def ctl(self, *args: str, timeout: float = 60.0) -> str:
        """``rabbitmqctl args...`` against this node; CalledProcessError if it fails."""
        result = subprocess.run(
            [str(self.scripts / "rabbitmqctl"), "-n", self.nodename, *args],
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        return result.stdout

    def restart_app(self, timeout: float = 60.0) -> None:
        """Restart the RabbitMQ application inside the running Erlang node (``rabbitmqctl
        stop_app`` then ``start_app``): every connection is closed, non-durable queues and
        transient messages are gone, durable queues come back from disk; same port. Returns
        once the node answers AMQP again (RabbitMQUnavailable after ``timeout`` seconds)."""
        self.ctl("stop_app", timeout=timeout)
        self.ctl("start_app", timeout=timeout)
        deadline = time.monotonic() + timeout
        while not amqp_handshake("127.0.0.1", self.port):
            if time.monotonic() >= deadline:
                raise RabbitMQUnavailable(
                    f"RabbitMQ node {self.nodename} did not answer AMQP within {timeout}s "
                    "of start_app"
                )
            time.sleep(0.2)

    @staticmethod
    def _end_process_group(process: subprocess.Popen[bytes]) -> None:
        """Wait for the node to exit after ``rabbitmqctl stop``, escalating to signals;
        then kill anything it left in its process group."""

        def signal_group(sig: signal.Signals) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)

        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            signal_group(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                signal_group(signal.SIGKILL)
                process.wait(timeout=5)
        signal_group(signal.SIGKILL)

    def __enter__(self) -> RabbitMQNode:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def docker_engine_answers(timeout: float = 10.0) -> bool:
    """True only if a Docker engine answers, not merely if the docker CLI is installed."""
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return result.returncode == 0


@contextlib.contextmanager
def rabbitmq() -> Iterator[str]:
    """Yield the URL of a RabbitMQ that is up, for as long as the context lasts.

    Raises RabbitMQUnavailable, saying why and what to do, when none can be had.
    """
    if url := os.environ.get(URL_ENV):
        yield url
        return
    scripts = find_server_scripts()
    if scripts is not None:
        with RabbitMQNode(scripts) as node:
            yield node.url
        return
    missing = (
        f"{URL_ENV} is not set and rabbitmq-server is not installed "
        "(install it with `bash scripts/install-rabbitmq.sh` as root)"
    )
    if not docker_engine_answers():
        raise RabbitMQUnavailable(f"{missing}, and no Docker engine answers")
    try:
        from testcontainers.rabbitmq import RabbitMqContainer  # type: ignore[import-not-found]
    except ImportError as e:
        raise RabbitMQUnavailable(
            f"{missing}; a Docker engine answers but testcontainers is not installed"
        ) from e
    with RabbitMqContainer("rabbitmq:3") as container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(5672)
        yield f"amqp://guest:guest@{host}:{port}/%2F"
