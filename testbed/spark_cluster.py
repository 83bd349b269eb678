"""A standalone Spark cluster on 127.0.0.1 from the installed PySpark: one master and workers
in JVMs of their own (``spark-class org.apache.spark.deploy.master.Master`` / ``...Worker``),
so applications on it get executors in their own JVMs, with Python workers of their own, as
on a real cluster.

Everything it starts lives under one temporary directory (logs, configuration, the workers'
work and local directories, the JVMs' temporary files) that ``stop()`` removes after ending
the master and the workers with their process groups (the executors are the workers'
children). Every wait is bounded; a daemon that does not come up fails with its log's tail.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Master and worker daemons' heap: they only schedule (Spark's default is 1 GiB each).
DAEMON_MEMORY = "256m"
#: Each executor's heap; Spark refuses less than 450 MiB.
EXECUTOR_MEMORY = "512m"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_READY = "I have been elected leader"
_WORKER_READY = "Successfully registered with master"


class SparkClusterError(RuntimeError):
    """The cluster could not be started; the message says which daemon and shows its log."""


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def logged(self) -> str:
        return self.log.read_text(errors="replace")

    def failure(self, what: str) -> str:
        tail = "\n".join(self.logged().splitlines()[-30:])
        return f"the Spark {self.name} of the test cluster {what}; the end of its log:\n{tail}"

    def signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)


def spark_home() -> Path:
    """The installed PySpark's own Spark distribution (``bin/spark-class``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkCluster:
    """``workers`` workers of ``cores`` cores and ``memory`` each under one master; use as a
    context manager, or call ``start()`` and ``stop()``. ``start_timeout`` bounds the whole
    start-up (a JVM starts in 5-10 s on a quiet machine, several times that on a loaded one).

    ``cores`` and ``memory`` are what the workers offer, not what they have: a worker of 2
    cores on a 2-core machine lets two applications of one executor per worker run at once.
    """

    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        start_timeout: float = 180.0,
    ) -> None:
        self.workers, self.cores, self.memory = workers, cores, memory
        self.start_timeout = start_timeout
        self._dir: Path | None = None
        self._master_url: str | None = None
        self._daemons: list[_Daemon] = []

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``, as ``--master`` and ``SparkSession.builder.master``
        take it."""
        if self._master_url is None:
            raise RuntimeError("the cluster has not been started")
        return self._master_url

    @property
    def directory(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the cluster has not been started")
        return self._dir

    def environment(self) -> dict[str, str]:
        """The environment for the daemons and for ``spark-submit`` against them: this
        PySpark's Spark, loopback only, no user configuration (an empty ``SPARK_CONF_DIR``),
        Python workers running this interpreter."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.directory / "conf"),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        return env

    def start(self) -> SparkCluster:
        self._dir = Path(tempfile.mkdtemp(prefix="spark-cluster-"))
        (self.directory / "conf").mkdir()
        deadline = time.monotonic() + self.start_timeout
        try:
            master = self._launch(
                "master",
                "org.apache.spark.deploy.master.Master",
                ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                # The REST submission server would listen on the fixed port 6066.
                ["-Dspark.master.rest.enabled=false"],
            )
            self._wait_for(master, _MASTER_READY, deadline)
            found = _MASTER_URL.search(master.logged())
            if found is None:
                raise SparkClusterError(master.failure("logged no master URL"))
            self._master_url = found.group(1)
            started = [
                self._launch(
                    f"worker-{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        *("--host", "127.0.0.1", "--webui-port", "0"),
                        *("--cores", str(self.cores), "--memory", self.memory),
                        *("--work-dir", str(self.directory / f"worker-{i}")),
                        self.master_url,
                    ],
                    [],
                )
                for i in range(1, self.workers + 1)
            ]
            for worker in started:
                self._wait_for(worker, _WORKER_READY, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(
        self, name: str, main_class: str, args: Sequence[str], java_options: Sequence[str]
    ) -> _Daemon:
        """Start one daemon with ``spark-class`` in a process group of its own, its output
        in ``<name>.log``; its temporary files and its executors' local files stay under the
        cluster's directory."""
        scratch = self.directory / name
        (scratch / "tmp").mkdir(parents=True)
        env = self.environment()
        env.update(
            SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
            SPARK_LOCAL_DIRS=str(scratch / "local"),
            SPARK_DAEMON_JAVA_OPTS=" ".join([f"-Djava.io.tmpdir={scratch / 'tmp'}", *java_options]),
        )
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        daemon = _Daemon(name, process, log)
        self._daemons.append(daemon)
        return daemon

    def _wait_for(self, daemon: _Daemon, line: str, deadline: float) -> None:
        while line not in daemon.logged():
            if daemon.process.poll() is not None:
                raise SparkClusterError(daemon.failure(f"exited ({daemon.process.returncode})"))
            if time.monotonic() > deadline:
                raise SparkClusterError(
                    daemon.failure(f"was not up within {self.start_timeout:g} s")
                )
            time.sleep(0.2)

    def stop(self) -> None:
        """End the workers (and their executors), then the master, each process group with
        SIGTERM and, after 20 s, SIGKILL; then remove the cluster's directory."""
        for daemon in reversed(self._daemons):
            daemon.signal_group(signal.SIGTERM)
        for daemon in reversed(self._daemons):
            try:
                daemon.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.signal_group(signal.SIGKILL)
                daemon.process.wait(timeout=10)
            daemon.signal_group(signal.SIGKILL)  # anything left in the group
        self._daemons.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def cluster_session(
    master_url: str, scratch: Path, executors: int, timeout: float = 180.0
) -> SparkSession:
    """A SparkSession of this process on the cluster at ``master_url``: the driver on
    127.0.0.1, ``executors`` executors of one core and EXECUTOR_MEMORY each, Python workers
    running this interpreter (the project is installed in it), Spark's files under
    ``scratch``. Returns once every executor has registered, at most ``timeout`` seconds
    after the session started."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    (scratch / "executor-tmp").mkdir(parents=True, exist_ok=True)
    session = (
        SparkSession.builder.master(master_url)
        .appName("amqp-spark-cluster-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.port", "0")  # the monitoring API, on a free port of 127.0.0.1
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(executors))
        .config("spark.executor.memory", EXECUTOR_MEMORY)
        .config("spark.sql.shuffle.partitions", str(executors))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dderby.system.home={scratch / 'derby'} -Djava.io.tmpdir={scratch}",
        )
        # The executors run on this machine: their temporary files (lz4's native library,
        # spills) go under ``scratch`` too.
        .config("spark.executor.extraJavaOptions", f"-Djava.io.tmpdir={scratch / 'executor-tmp'}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    deadline = time.monotonic() + timeout
    while len(executor_tasks(session)) < executors:
        if time.monotonic() > deadline:
            session.stop()
            raise SparkClusterError(
                f"{len(executor_tasks(session))} of {executors} executors registered with the "
                f"application within {timeout:.0f} s (master {master_url})"
            )
        time.sleep(0.2)
    return session


def executor_tasks(session: SparkSession) -> dict[str, int]:
    """The application's executors (the driver not counted), each with the tasks it ran so
    far, from the driver's monitoring API (``/api/v1/applications/<id>/executors``)."""
    import json
    from urllib.request import urlopen

    context = session.sparkContext
    url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/executors"
    with urlopen(url, timeout=30) as answer:
        listed = json.load(answer)
    return {e["id"]: int(e["totalTasks"]) for e in listed if e["id"] != "driver"}
