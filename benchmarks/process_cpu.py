"""CPU-seconds per process during a measurement, read from ``/proc`` (Linux).

On a shared machine a rate moves with everybody else's load, while the CPU a process spends
on the same work moves much less; so the Spark benchmarks report both. Processes are
grouped by what they are for the source: the broker (a RabbitMQ node's ``beam.smp``, found
by its node name, or the bundled broker's ``python -m broker``), Spark's JVM, the source's
runner (``python_streaming_source_runner``), the other Python workers (the executors) and
this process (the driver, or the raw client consuming in it). Samples are taken every 200 ms
(each scans /proc), so a process that ends between two samples loses at most that much.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import TracebackType

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")
KINDS = ("broker", "jvm", "runner", "executors", "driver")


def _stat(pid: int) -> list[str] | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces


def _cpu_seconds(pid: int) -> float | None:
    fields = _stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / _TICK


def scheduled_seconds(pid: int) -> float:
    """CPU time of process ``pid`` so far, all its threads, to the nanosecond (schedstat;
    /proc/PID/stat counts 10 ms ticks, too coarse for a few percent of a second's work)."""
    return (
        sum(
            int(task.joinpath("schedstat").read_text().split()[0])
            for task in (_PROC / str(pid) / "task").iterdir()
        )
        / 1e9
    )


def parent(pid: int) -> int | None:
    """The parent of process ``pid`` (None once it is gone)."""
    fields = _stat(pid)
    return None if fields is None else int(fields[1])


def command_line(pid: int) -> str:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, UnicodeDecodeError):
        return ""


def _pids() -> list[int]:
    return [int(p.name) for p in _PROC.iterdir() if p.name.isdigit()]


def rabbitmq_node_pid(port: int) -> int | None:
    """The ``beam.smp`` of the RabbitMQ node listening on ``port`` (its environment says
    ``RABBITMQ_NODE_PORT``, as the private nodes of testbed/rabbitmq.py set it)."""
    wanted = f"RABBITMQ_NODE_PORT={port}".encode()
    for pid in _pids():
        if "beam.smp" not in command_line(pid):
            continue
        try:
            environment = (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted in environment:
            return pid
    return None


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        fields = _stat(pid)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kind(pid: int, me: int, broker: int | None) -> str:
    if pid == broker:
        return "broker"
    if pid == me:
        return "driver"
    line = command_line(pid)
    program = line.split(" ", 1)[0]
    if program.endswith("java"):
        return "jvm"
    if "streaming_source_runner" in line:
        return "runner"
    if " -m broker" in line:
        return "broker"
    return "executors" if "python" in program else "other"


class ProcessCPU:
    """``with ProcessCPU(broker_pid) as cpu: ...``, then ``cpu.seconds`` per kind (KINDS) and
    ``cpu.wall``: this process, its descendants and ``broker_pid`` (None: only a bundled
    broker among the descendants is counted). A subclass groups processes otherwise by
    overriding ``kinds`` and ``kind_of``."""

    #: The groups ``seconds`` reports, as ``kind_of`` names them.
    kinds: tuple[str, ...] = KINDS

    def __init__(self, broker_pid: int | None = None, interval: float = 0.2) -> None:
        self._broker, self._interval = broker_pid, interval
        self._me = os.getpid()
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._kinds: dict[int, str] = {}
        self._started = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.wall = 0.0

    def _sample(self) -> None:
        others = [self._broker] if self._broker is not None else []
        for pid in [self._me, *_descendants(self._me), *others]:
            now = _cpu_seconds(pid)
            if now is None:
                continue
            if pid not in self._kinds:
                self._kinds[pid] = self.kind_of(pid)
                self._first[pid] = now if not self._started else 0.0  # new: all of it counts
            self._last[pid] = now

    def kind_of(self, pid: int) -> str:
        """What process ``pid`` is for: one of ``kinds``, else not counted."""
        return _kind(pid, self._me, self._broker)

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            self._sample()

    def __enter__(self) -> ProcessCPU:
        self._sample()
        self._started = True
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join()
        self._sample()
        self.wall = time.perf_counter() - self._t0

    @property
    def seconds(self) -> dict[str, float]:
        totals = dict.fromkeys(self.kinds, 0.0)
        for pid, kind in self._kinds.items():
            if kind in totals:
                totals[kind] += self._last[pid] - self._first[pid]
        return totals
