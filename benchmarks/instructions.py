"""Instructions a process executes for a stretch of work: a count that, unlike a rate or CPU
seconds, does not move with the load other processes put on a shared machine.

This machine's perf cannot count (``perf stat -e instructions true`` says "<not supported>":
a VM without PMU access), so the count is valgrind's callgrind. The process runs under it
(``Callgrind.wrap``) with its instrumentation off, some 5x slower than at full speed, so that
it starts and warms up in reasonable time; ``Callgrind.count`` turns it on and zeroes the
counters before the work (which then runs ~50x slower: size workloads accordingly), and dumps
them and turns it off after (``callgrind_control``, which reaches the process through vgdb
even while it waits in a system call), reading the total of instructions from the dump.
What runs in between counts, work only: no interpreter start-up, imports or warm-up.
``PYTHONHASHSEED`` is fixed so that two runs hash, and so iterate sets, alike.

A count still varies a little from run to run: how many frames one ``recv`` returns depends
on timing, and garbage collection runs when allocations say so. ``spread`` is how far the
counts of the same work spread (max/min - 1), which is the noise a ratio is judged against.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from testbed.ports import free_port

#: Seconds a broker may take to listen under callgrind (on a loaded machine: minutes).
START_TIMEOUT = 600.0
#: Seconds a client may wait for a broker under callgrind (thousands of messages: minutes).
CLIENT_TIMEOUT = 900.0
_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.MULTILINE)
HASH_SEED = "0"


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


@dataclass
class Counted:
    """The instructions of one stretch of work, set when ``Callgrind.count`` exits."""

    instructions: int = 0


class Callgrind:
    """Processes run under callgrind, their dumps in a temporary directory of their own."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="callgrind-"))

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Callgrind:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wrap(self, command: Sequence[str]) -> list[str]:
        """``command`` run under callgrind (no cache simulation: instructions only)."""
        out = self._dir / "callgrind.out.%p"
        return [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            *command,
        ]

    def _control(self, pid: int, option: str) -> None:
        subprocess.run(
            ["callgrind_control", option, str(pid)], check=True, capture_output=True, timeout=120
        )

    @contextlib.contextmanager
    def count(self, pid: int) -> Iterator[Counted]:
        """Count what process ``pid`` (run under ``wrap``) executes in the ``with`` block."""
        counted = Counted()
        self._control(pid, "--instr=on")
        self._control(pid, "--zero")
        yield counted
        before = set(self._dir.glob(f"callgrind.out.{pid}.*"))
        self._control(pid, "--dump")
        self._control(pid, "--instr=off")
        (dump,) = set(self._dir.glob(f"callgrind.out.{pid}.*")) - before
        found = _SUMMARY.search(dump.read_bytes())
        if found is None:
            raise RuntimeError(f"no summary line in {dump}")
        counted.instructions = int(found.group(1))
        dump.unlink()


@dataclass(frozen=True)
class BrokerCommand:
    """``python -m PROGRAM --in-memory --port P ARGS`` of the checkout ``tree`` (its working
    directory, so that its ``broker`` package is the one imported); ``pythonpath`` goes
    before the checkout (a launcher's directory)."""

    tree: Path
    args: tuple[str, ...] = ()
    program: str = "broker"
    pythonpath: tuple[Path, ...] = ()


@dataclass
class Broker:
    pid: int
    port: int


def _wait_listening(process: subprocess.Popen[bytes], port: int, deadline: float) -> None:
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"a broker exited ({process.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"a broker did not listen within {START_TIMEOUT}s") from None
            time.sleep(0.5)


@contextlib.contextmanager
def brokers(
    commands: Sequence[BrokerCommand], callgrind: Callgrind | None = None
) -> Iterator[list[Broker]]:
    """The brokers of ``commands``, under ``callgrind`` if given, all started at once (one
    takes minutes to start under callgrind), killed at the end."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for command in commands:
            port = free_port()
            argv = [sys.executable, "-m", command.program, "--in-memory", "--port", str(port)]
            argv += command.args
            environment = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
            environment["PYTHONPATH"] = os.pathsep.join(
                map(str, [*command.pythonpath, command.tree])
            )
            if callgrind is not None:
                argv = callgrind.wrap(argv)
            process = subprocess.Popen(argv, cwd=command.tree, env=environment)
            started.append((process, port))
        deadline = time.monotonic() + START_TIMEOUT
        for process, port in started:
            _wait_listening(process, port, deadline)
        yield [Broker(process.pid, port) for process, port in started]
    finally:
        for process, _ in started:
            process.kill()
            process.wait(30)


def spread(counts: Sequence[float]) -> float:
    """How far counts of the same work spread: max/min - 1."""
    return max(counts) / min(counts) - 1
