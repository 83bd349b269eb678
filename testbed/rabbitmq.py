"""A real RabbitMQ for the tests: a private node started from an installed server, an
existing server named by the environment, or (only when a Docker engine answers and the
optional ``testcontainers`` package is installed) a container.

Two kinds of node: RabbitMQ 4 (the reference: Debian trixie's ``rabbitmq-server`` 4.0.x in
a debootstrap'd root built by ``scripts/install-rabbitmq4.sh``, run there with chroot) and
RabbitMQ 3.10 (Debian bookworm's, installed on the host by ``scripts/install-rabbitmq.sh``).
On a machine whose own apt gives RabbitMQ 4, the host's install serves as the 4 node.

A private node is isolated from any system RabbitMQ: its own AMQP, distribution and epmd
ports on 127.0.0.1, its own node name, and all state (Mnesia, logs, config, the Erlang
cookie via ``HOME``) in a temporary directory removed on stop. A node in a root runs in
mount and PID namespaces of its own (``unshare``): /proc, /dev and /sys are mounted for it
there only, so they go when its last process does, however it ends, and so does its epmd.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from testbed.ports import free_port

#: The URL of an existing RabbitMQ 4 to use instead of a private node.
URL_ENV = "AMQP_SPARK_RABBITMQ_URL"
#: The same for RabbitMQ 3 (the connector's tests also run against 3.10).
URL3_ENV = "AMQP_SPARK_RABBITMQ3_URL"
_URL_ENVS = {4: URL_ENV, 3: URL3_ENV}
#: Where scripts/install-rabbitmq4.sh builds the trixie root (the same default as there).
ROOT_ENV = "AMQP_SPARK_RABBITMQ4_ROOT"
_DEFAULT_ROOT = Path("/var/cache/amqp-spark/rabbitmq4-trixie")
_ROOT_READY_STAMP = ".amqp-spark-rabbitmq4-ready"
#: What installs each kind, for the message when it is missing.
_INSTALLERS = {4: "scripts/install-rabbitmq4.sh", 3: "scripts/install-rabbitmq.sh"}
_CONTAINER_IMAGES = {4: "rabbitmq:4-management", 3: "rabbitmq:3.10"}
#: The plugin of RabbitMQ's stream protocol, enabled on every private RabbitMQ 4 node.
STREAM_PLUGIN = "rabbitmq_stream"
#: The plugins a private node of each major version runs with by default.
_DEFAULT_PLUGINS: dict[int, tuple[str, ...]] = {4: (STREAM_PLUGIN,), 3: ()}
#: The stream protocol's URI of an existing RabbitMQ 4 (``AMQP_SPARK_RABBITMQ_URL``); without
#: it, that server's host, credentials and vhost on the stream protocol's port, 5552.
STREAM_URL_ENV = "AMQP_SPARK_RABBITMQ_STREAM_URL"
STREAM_DEFAULT_PORT = 5552

# Debian's /usr/sbin/rabbitmq-server re-runs itself as the ``rabbitmq`` user with the
# system node's directories; the scripts it wraps honour our environment as they are.
_SCRIPTS_IN_PACKAGE = Path("/usr/lib/rabbitmq/bin")
# Run in new mount and PID namespaces (by unshare, which mounts /proc for them) before
# chroot: /dev and /sys bound there, invisible outside, gone when the namespace's last
# process ends. $1 is the root, the rest the command to run in it.
_ENTER_ROOT = (
    'root=$1; shift; mount --rbind /dev "$root/dev"; mount --rbind /sys "$root/sys"; '
    'exec chroot "$root" "$@"'
)
# Inside the root the host's environment means nothing (its PATH, the venv, ...).
_ROOT_ENVIRONMENT = {
    "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}
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


def stream_uri_of(url: str) -> str:
    """The stream protocol's ``rabbitmq-stream://`` URI of the RabbitMQ serving ``url``: a
    private node's own stream listener, else (a server named by the environment)
    ``AMQP_SPARK_RABBITMQ_STREAM_URL`` or the same host, credentials and vhost on port
    5552. RabbitMQUnavailable for a private node started without ``rabbitmq_stream``."""
    node = _RUNNING.get(url)
    if node is not None:
        return node.stream_url
    if named := os.environ.get(STREAM_URL_ENV):
        return named
    parts = urllib.parse.urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    at = f"{credentials}@" if credentials else ""
    return f"rabbitmq-stream://{at}{parts.hostname}:{STREAM_DEFAULT_PORT}{parts.path or '/%2F'}"


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


@dataclass(frozen=True)
class RabbitMQInstall:
    """An installed RabbitMQ a node can run from: the host's, or one in a root of its own
    (``root``), where ``scripts`` is the path as seen from inside the root."""

    version: str
    scripts: Path
    root: Path | None = None

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def command(self, program: str, *args: str) -> list[str]:
        """The command line running ``program args...`` of this install."""
        argv = [str(self.scripts / program), *args]
        if self.root is None:
            return argv
        return [
            "unshare",
            "--mount",
            "--propagation=private",
            "--pid",
            "--fork",
            "--kill-child",  # unshare killed: the namespace's first process, so all of it
            f"--mount-proc={self.root / 'proc'}",
            "sh",
            "-c",
            _ENTER_ROOT,
            "enter-root",
            str(self.root),
            *argv,
        ]

    def base_environment(self) -> dict[str, str]:
        """What a node's and its CLI tools' environments start from."""
        return dict(os.environ) if self.root is None else dict(_ROOT_ENVIRONMENT)

    def temporary_directory(self) -> tuple[Path, Path]:
        """A new directory for a node's state: its path here and as the node sees it."""
        if self.root is None:
            here = Path(tempfile.mkdtemp(prefix="rabbitmq-test-"))
            return here, here
        here = Path(tempfile.mkdtemp(prefix="rabbitmq-test-", dir=self.root / "tmp"))
        return here, Path("/") / here.relative_to(self.root)


def _installed_version(scripts_here: Path) -> str | None:
    """The version of the RabbitMQ whose scripts are in ``scripts_here`` (its server
    application's directory, ``../lib/rabbitmq_server-<version>``), None if none is."""
    if not (scripts_here / "rabbitmq-server").is_file():
        return None
    for server in sorted((scripts_here.parent / "lib").glob("rabbitmq_server-*")):
        if m := re.fullmatch(r"rabbitmq_server-(\d+\.\d+\.\d+)", server.name):
            return m.group(1)
    return None


def rabbitmq4_root() -> Path:
    """Where scripts/install-rabbitmq4.sh builds (and the tests look for) the trixie root."""
    return Path(os.environ.get(ROOT_ENV) or _DEFAULT_ROOT)


def installed_rabbitmqs() -> list[RabbitMQInstall]:
    """Every RabbitMQ a private node can run from: the host's, then the trixie root's (only
    once its build finished, see scripts/install-rabbitmq4.sh)."""
    found = []
    host_scripts = [_SCRIPTS_IN_PACKAGE]
    on_path = shutil.which("rabbitmq-server")
    if on_path and Path(on_path).parent not in (Path("/usr/sbin"), Path("/sbin")):
        host_scripts.append(Path(on_path).parent)
    for scripts in host_scripts:
        if version := _installed_version(scripts):
            found.append(RabbitMQInstall(version, scripts))
            break
    root = rabbitmq4_root()
    in_root = root / _SCRIPTS_IN_PACKAGE.relative_to("/")
    if (root / _ROOT_READY_STAMP).is_file() and (version := _installed_version(in_root)):
        found.append(RabbitMQInstall(version, _SCRIPTS_IN_PACKAGE, root))
    return found


def find_rabbitmq(major: int) -> RabbitMQInstall | None:
    """An installed RabbitMQ of version ``major`` (4 or 3), None when there is none."""
    return next((i for i in installed_rabbitmqs() if i.major == major), None)


def missing_rabbitmq(major: int) -> str:
    """Why no private RabbitMQ ``major`` node can be had, and what installs one."""
    return (
        f"RabbitMQ {major} is not installed (as root: bash {_INSTALLERS[major]}; "
        f"or set {_URL_ENVS[major]} to a RabbitMQ {major} you have)"
    )


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a node's TLS listeners: its certificate and key, and the CA it trusts
    for client certificates."""

    certfile: Path
    keyfile: Path
    cacertfile: Path


class RabbitMQNode:
    """A private RabbitMQ node of ``install``; use as a context manager or call start() and
    stop(). ``plugins`` are enabled from the start (none by default); with
    ``rabbitmq_management`` the management API listens on ``management_port`` of 127.0.0.1,
    with ``rabbitmq_stream`` the stream protocol on ``stream_port`` (``stream_url``), which
    is also what the node advertises in its Metadata answers.

    Every wait is bounded: start() gives up after ``start_timeout`` seconds and stop()
    escalates from ``rabbitmqctl stop`` to SIGTERM and SIGKILL of the process group.
    """

    def __init__(
        self,
        install: RabbitMQInstall,
        start_timeout: float = 90.0,
        plugins: Sequence[str] = (),
        tls: TlsFiles | None = None,
    ) -> None:
        self.install = install
        self.start_timeout = start_timeout
        self.plugins = tuple(plugins)
        #: with ``tls``: amqps on ``tls_port``, the stream protocol over TLS on
        #: ``stream_tls_port`` (client certificates verified when given, not required)
        self.tls = tls
        self.tls_port = free_port()
        self.stream_tls_port = free_port()
        self.port = free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.management_port = free_port()
        self.stream_port = free_port()
        self.nodename = f"rabbit-test-{self.port}@localhost"
        self.startup_seconds: float | None = None
        self._dir: Path | None = None  # here
        self._node_dir: Path | None = None  # the same, as the node sees it
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    @property
    def stream_url(self) -> str:
        """The stream protocol's URI (the scheme of RabbitMQ's stream clients)."""
        if STREAM_PLUGIN not in self.plugins:
            raise RabbitMQUnavailable(f"node {self.nodename} runs without {STREAM_PLUGIN}")
        return f"rabbitmq-stream://guest:guest@127.0.0.1:{self.stream_port}/%2F"

    @property
    def management_url(self) -> str:
        """The management API's base URL (only served with the rabbitmq_management plugin)."""
        return f"http://127.0.0.1:{self.management_port}/api/"

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
        if self._node_dir is None:
            raise RuntimeError("the node has not been started")
        d = self._node_dir
        env = self.install.base_environment()
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

    def _write_config(self) -> None:
        d = self._workdir
        (d / "enabled_plugins").write_text(f"[{','.join(self.plugins)}].\n")
        (d / "rabbitmq-env.conf").write_text("")
        # A test node must not stop accepting publishes because the disk is nearly full.
        config = "disk_free_limit.absolute = 1MB\nlog.console = false\nlog.file.level = info\n"
        if "rabbitmq_management" in self.plugins:
            config += (
                f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.management_port}\n"
            )
        if STREAM_PLUGIN in self.plugins:
            # Advertised as listened on: a client's Metadata request must not send it to the
            # host name of the machine or to the default port.
            config += (
                f"stream.listeners.tcp.1 = 127.0.0.1:{self.stream_port}\n"
                f"stream.advertised_host = 127.0.0.1\n"
                f"stream.advertised_port = {self.stream_port}\n"
            )
        if self.tls is not None:
            config += self._tls_config(self.tls)
        (d / "rabbitmq.conf").write_text(config)

    def _tls_config(self, tls: TlsFiles) -> str:
        """The TLS listeners' lines, the files copied where the node sees them."""
        assert self._node_dir is not None
        here, there = self._workdir / "tls", self._node_dir / "tls"
        here.mkdir(exist_ok=True)
        lines = [f"listeners.ssl.1 = 127.0.0.1:{self.tls_port}"]
        for name, path in (
            ("certfile", tls.certfile),
            ("keyfile", tls.keyfile),
            ("cacertfile", tls.cacertfile),
        ):
            shutil.copyfile(path, here / name)
            lines.append(f"ssl_options.{name} = {there / name}")
        lines += ["ssl_options.verify = verify_peer", "ssl_options.fail_if_no_peer_cert = false"]
        if STREAM_PLUGIN in self.plugins:
            lines += [
                f"stream.listeners.ssl.1 = 127.0.0.1:{self.stream_tls_port}",
                f"stream.advertised_tls_port = {self.stream_tls_port}",
            ]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        self._dir, self._node_dir = self.install.temporary_directory()
        self._write_config()
        self._boot()

    def _boot(self) -> None:
        """Start the server on the node's directory as it is and wait until it answers."""
        began = time.monotonic()
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                self.install.command("rabbitmq-server"),
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
            if self.answers():
                self.startup_seconds = time.monotonic() - began
                _RUNNING[self.url] = self
                return
            time.sleep(0.5)
        self._fail(
            f"did not answer on 127.0.0.1:{self.port} (AMQP) or {self.stream_port} (stream, "
            f"with {STREAM_PLUGIN}) within {self.start_timeout}s"
        )

    def answers(self) -> bool:
        """True once the node answers AMQP 0-9-1 and, with ``rabbitmq_stream``, accepts
        connections on its stream port."""
        if not amqp_handshake("127.0.0.1", self.port):
            return False
        if STREAM_PLUGIN not in self.plugins:
            return True
        try:
            with socket.create_connection(("127.0.0.1", self.stream_port), timeout=2.0):
                return True
        except OSError:
            return False

    def _fail(self, what: str) -> None:
        tail = self.log_path.read_text(errors="replace")[-3000:]
        self.stop()
        raise RabbitMQUnavailable(f"RabbitMQ node {self.nodename} {what}; its output:\n{tail}")

    def stop(self) -> None:
        """Stop the node and everything it started, remove its directory. Idempotent."""
        if self._dir is None:
            return
        _RUNNING.pop(self.url, None)
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self.ctl("stop", timeout=30)
            self._end_process_group(process)
        # epmd daemonizes out of our process group (in a root, its PID namespace ended with
        # the node). Its port is private to this node, so the epmd there is the one our node
        # started, and no other node is using it.
        if self.install.root is None and shutil.which("epmd"):
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                subprocess.run(
                    ["epmd", "-port", str(self.epmd_port), "-kill"],
                    env=self.environment(),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                )
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = self._node_dir = None
        self._process = None

    def ctl(self, *args: str, timeout: float = 60.0) -> str:
        """``rabbitmqctl args...`` against this node; CalledProcessError if it fails,
        TimeoutExpired after ``timeout`` seconds."""
        result = subprocess.run(
            self.install.command("rabbitmqctl", "-n", self.nodename, *args),
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
def rabbitmq(major: int = 4) -> Iterator[str]:
    """Yield the URL of a RabbitMQ ``major`` (4, the reference, or 3) that is up, for as
    long as the context lasts: the server its environment variable names
    (``AMQP_SPARK_RABBITMQ_URL`` for 4, ``AMQP_SPARK_RABBITMQ3_URL`` for 3), else a private
    node (a RabbitMQ 4 one with ``rabbitmq_stream``: ``stream_uri_of(url)``), else a
    container where a Docker engine answers.

    Raises RabbitMQUnavailable, saying why and what to do, when none can be had.
    """
    if url := os.environ.get(_URL_ENVS[major]):
        yield url
        return
    install = find_rabbitmq(major)
    if install is not None:
        with RabbitMQNode(install, plugins=_DEFAULT_PLUGINS[major]) as node:
            yield node.url
        return
    missing = missing_rabbitmq(major)
    if not docker_engine_answers():
        raise RabbitMQUnavailable(f"{missing}, and no Docker engine answers")
    try:
        from testcontainers.rabbitmq import RabbitMqContainer  # type: ignore[import-not-found]
    except ImportError as e:
        raise RabbitMQUnavailable(
            f"{missing}; a Docker engine answers but testcontainers is not installed"
        ) from e
    with RabbitMqContainer(_CONTAINER_IMAGES[major]) as container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(5672)
        yield f"amqp://guest:guest@{host}:{port}/%2F"
