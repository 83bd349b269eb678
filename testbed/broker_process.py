"""The broker as a separate program (``python -m broker``), so that a test can kill -9 it
and start it again on the same data directory, and a benchmark can measure it apart from
its clients."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from testbed.ports import free_port

START_TIMEOUT = 60.0
# setrlimit, then exec the program: what runs between fork and exec in a child of a process
# with threads (preexec_fn) should not be Python, so the limit is set by a Python of its own.
_WITH_OPEN_FILES_LIMIT = (
    "import os, resource, sys; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2]))); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])"
)


class BrokerProcess:
    """``python -m broker`` on a free port of 127.0.0.1 with ``args``: on ``data_dir``
    (its log written beside it), or ``--in-memory`` when that is None (its log on our
    stderr). ``program`` is another module with those options (tests/support/starved_broker.py);
    ``open_files`` its soft and hard RLIMIT_NOFILE."""

    def __init__(
        self,
        data_dir: Path | None,
        *args: str,
        program: str = "broker",
        open_files: tuple[int, int] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.args = args
        self.program = program
        self.open_files = open_files
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}-broker.log" if data_dir else None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def start(self, timeout: float = START_TIMEOUT) -> BrokerProcess:
        """Start the program and wait until it accepts connections."""
        self.port = free_port()
        where = ["--data-dir", str(self.data_dir)] if self.data_dir else ["--in-memory"]
        command = [sys.executable, "-m", self.program, *where, "--port", str(self.port)]
        # An ephemeral management port and no stream listener (unless ``args`` ask for one):
        # brokers of parallel runs must not race for 15672 and 5552.
        command += ["--management-port", "0", "--stream-port", "0", *self.args]
        if self.open_files is not None:
            limit = [_WITH_OPEN_FILES_LIMIT, *map(str, self.open_files)]
            command = [sys.executable, "-c", *limit, *command[1:]]
        with open(self.log, "ab") if self.log else contextlib.nullcontext() as log:
            self.proc = subprocess.Popen(command, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                output = self.log.read_text()[-2000:] if self.log else "(see stderr)"
                raise RuntimeError(f"the broker exited: {output}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"the broker did not listen within {timeout}s")

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        """SIGTERM: a clean shutdown."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)
        self.proc = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()
