"""Run the clients' own upstream test suites (aiormq 6.9.3, aio-pika 9.6.0, from their sdists,
unmodified) against the bundled broker and against RabbitMQ, and compare.

``bash scripts/peer-suites.sh [--broker bundled --broker rabbitmq] [--suite aiormq ...]``

Each suite runs in a venv of its own under ``.peer-venv/`` (git-ignored) with the pinned
client and the test requirements of its own ``[dependency-groups] dev`` (the two suites'
requirements cannot share one venv: aiormq's wants aiomisc-pytest<2, which imports what
aiomisc 18, required by aio-pika's, no longer has). The main ``.venv`` keeps newer clients.

Connection settings are passed the way each suite reads them: aiormq's conftest takes
``AMQP_URL`` (and then expects TLS on port 5671 of the same host); aio-pika's conftest only
knows Docker, so ``peer_plugin.py`` (``-p peer_plugin``) replaces its Docker check and its
``rabbitmq_container`` fixture from outside. Each broker gets an amqps listener with the
suites' own certificates (``tests/certs`` of the aiormq sdist, the ones its Docker image
uses), so their TLS tests run too: on 127.0.0.1:5671 when aiormq runs (its conftest knows
no other port), so the brokers run one after the other. The suites against one broker run
side by side with ``--parallel``: they share nothing but the
broker, and most of their time is spent waiting.

Without ``--broker rabbitmq`` (CI: the full side by side takes too long, see docs/testing.md),
RabbitMQ's outcomes are those recorded in ``rabbitmq4-passed.txt``: the tests that passed on
RabbitMQ 4 when a full run wrote it (``--write-baseline``).

Exit status: 0 when no test passes on RabbitMQ and fails on the bundled broker (apart from
the entries of ``expected-differences.txt``), 1 when one does, 2 when a suite gave no
results (crashed, timed out, or could not be installed).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testbed.ports import free_port
from testbed.rabbitmq import (
    RabbitMQNode,
    RabbitMQUnavailable,
    amqp_handshake,
    find_rabbitmq,
    missing_rabbitmq,
)

PROJECT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EXPECTED_FILE = HERE / "expected-differences.txt"
BASELINE_FILE = HERE / "rabbitmq4-passed.txt"
#: aiormq's conftest, given AMQP_URL, looks for TLS on this port of the same host.
AIORMQ_TLS_PORT = 5671


@dataclass(frozen=True)
class Suite:
    """A client whose sdist ships its tests, and what its tests need besides the client."""

    name: str
    version: str
    requirements: tuple[str, ...]
    #: its conftest knows no connection setting: load peer_plugin.py into its run
    needs_plugin: bool

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


SUITES = {
    s.name: s
    for s in (
        # dev group: pytest>=8.4,<9, aiomisc-pytest>=1.1,<2 (which needs aiomisc<18)
        Suite(
            "aiormq",
            "6.9.3",
            ("pytest==8.4.2", "aiomisc-pytest==1.3.4", "aiomisc==17.10.3"),
            needs_plugin=False,
        ),
        # dev group: aiomisc>=18, aiomisc-pytest, pytest, shortuuid, timeout-decorator
        Suite(
            "aio-pika",
            "9.6.0",
            (
                "aiormq==6.9.3",
                "pytest==9.2.0",
                "aiomisc-pytest==2.0.0",
                "aiomisc==18.0.37",
                "shortuuid==1.0.13",
                "timeout-decorator==0.5.0",
            ),
            needs_plugin=True,
        ),
    )
}

#: Tests left out of every run, each with its reason: only tests that leave this machine.
#: (None of aiormq 6.9.3's or aio-pika 9.6.0's do: every URL they open is the broker's.)
EXCLUDED: dict[str, str] = {}


@dataclass
class Results:
    """Outcome per test id (``classname::name``) of one suite against one broker."""

    outcomes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    problem: str | None = None  # why there are no (or incomplete) results

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)


# -- installing a suite ---------------------------------------------------------------------


def _run(cmd: list[str], **kwargs: object) -> None:
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]


def _extract(archive: tarfile.TarFile, folder: Path) -> None:
    """Unpack an sdist with tarfile's "data" filter, or, on Pythons that have no filters
    (before 3.11.4; Debian bookworm's is 3.11.2), after the same refusals made by hand:
    no links, devices, absolute names or names that climb out of ``folder``."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(folder, filter="data")
        return
    for member in archive.getmembers():
        name = Path(member.name)
        if not (member.isfile() or member.isdir()) or name.is_absolute() or ".." in name.parts:
            raise RuntimeError(f"refusing to unpack {member.name!r} from {archive.name!r}")
    archive.extractall(folder)  # every member checked above


def install(suite: Suite, cache: Path) -> tuple[Path, Path]:
    """The suite's venv python and its unpacked sdist (built once, kept in ``cache``)."""
    home = cache / suite.key
    python = home / "venv" / "bin" / "python"
    source = home / "src" / f"{suite.name.replace('-', '_')}-{suite.version}"
    stamp = home / ".installed"
    if stamp.is_file() and python.is_file() and (source / "tests").is_dir():
        return python, source
    shutil.rmtree(home, ignore_errors=True)
    (home / "src").mkdir(parents=True)
    pin = f"{suite.name}=={suite.version}"
    # The sdist (the wheel has no tests); building it is not needed, only its files.
    _run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        + ["--no-binary", suite.name, pin, "-d", str(home / "src")]
    )
    (sdist,) = (home / "src").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        _extract(archive, home / "src")
    _run([sys.executable, "-m", "venv", str(home / "venv")])
    _run([str(python), "-m", "pip", "install", "-q", pin, *suite.requirements])
    stamp.write_text(f"{pin} {' '.join(suite.requirements)}\n")
    return python, source


# -- brokers --------------------------------------------------------------------------------


def _certs(cache: Path) -> Path:
    """The suites' TLS certificates (aiormq's tests/certs; aio-pika's tests use the same
    image and so the same server certificate)."""
    _, source = install(SUITES["aiormq"], cache)
    return source / "tests" / "certs"


@contextlib.contextmanager
def bundled_broker(certs: Path, tls_port: int, workdir: Path) -> Iterator[str]:
    """The bundled broker as a subprocess (``python -m broker``): AMQP on a free port,
    amqps on ``tls_port``, management off, nothing durable."""
    port = free_port()
    config = workdir / "bundled.toml"
    config.write_text(
        "[tls]\n"
        f"port = {tls_port}\n"
        f'certfile = "{certs / "server.pem"}"\n'
        f'keyfile = "{certs / "server.key"}"\n'
        f'cacertfile = "{certs / "ca.pem"}"\n'
        'verify = "verify_peer"\n'
        "fail_if_no_peer_cert = false\n"
        "[management]\nenabled = false\n"
    )
    log = open(workdir / "bundled.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "--in-memory", "--host", "127.0.0.1"]
        + ["--port", str(port), "--config", str(config), "--log-level", "WARNING"]
        + ["--stream-port", "0"],
        cwd=PROJECT,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while not amqp_handshake("127.0.0.1", port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the bundled broker did not start; see {log.name}")
            time.sleep(0.1)
        yield f"amqp://guest:guest@127.0.0.1:{port}/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


class _TLSNode(RabbitMQNode):
    """A private RabbitMQ node that also listens for amqps on 127.0.0.1:``tls_port`` with
    the suites' certificates (as their Docker image does: verify_peer, no certificate
    needed)."""

    certs: Path
    tls_port: int

    def _write_config(self) -> None:
        super()._write_config()
        assert self._dir is not None and self._node_dir is not None
        for name in ("ca.pem", "server.pem", "server.key"):
            shutil.copy(self.certs / name, self._dir / name)
        seen = self._node_dir  # the copies as the node sees them (it may run in a root)
        with open(self._dir / "rabbitmq.conf", "a") as config:
            config.write(
                f"listeners.ssl.1 = 127.0.0.1:{self.tls_port}\n"
                f"ssl_options.cacertfile = {seen / 'ca.pem'}\n"
                f"ssl_options.certfile = {seen / 'server.pem'}\n"
                f"ssl_options.keyfile = {seen / 'server.key'}\n"
                "ssl_options.verify = verify_peer\n"
                "ssl_options.fail_if_no_peer_cert = false\n"
            )


@contextlib.contextmanager
def rabbitmq_broker(certs: Path, tls_port: int, major: int) -> Iterator[str]:
    """A private RabbitMQ ``major`` node (see testbed/rabbitmq.py)."""
    found = find_rabbitmq(major)
    if found is None:
        raise RabbitMQUnavailable(missing_rabbitmq(major))
    node = _TLSNode(found)
    node.certs, node.tls_port = certs, tls_port
    with node:
        yield f"amqp://guest:guest@127.0.0.1:{node.port}/"


# -- running and reading a suite ------------------------------------------------------------


def run_suite(
    suite: Suite,
    cache: Path,
    broker: tuple[str, int],
    junit: Path,
    timeout: float,
    keyword: str | None,
) -> Results:
    """Run ``suite`` against the broker at ``broker`` (its URL and amqps port)."""
    python, source = install(suite, cache)
    url, tls_port = broker
    env = dict(os.environ, AMQP_URL=url, PEER_AMQPS_PORT=str(tls_port))
    env.pop("PYTHONPATH", None)
    args = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    args += ["-o", "log_cli=false"]  # aio-pika's pyproject turns live logging on
    if suite.needs_plugin:
        env["PYTHONPATH"] = str(HERE)
        args += ["-p", "peer_plugin"]
    args += [f"--deselect={test}" for test in EXCLUDED]
    if keyword:
        args += ["-k", keyword]
    junit.unlink(missing_ok=True)
    began = time.monotonic()
    log_path = junit.with_suffix(".log")
    problem = None
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            args, cwd=source, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        _RUNNING.add(process)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            problem = f"timed out after {timeout:.0f} s (log: {log_path})"
        finally:
            _RUNNING.discard(process)
    results = read_junit(junit) if junit.is_file() else Results()
    results.seconds = time.monotonic() - began
    # pytest's 5: nothing collected, which only a -k may make right
    if not results.outcomes and not (keyword and process.returncode == 5):
        problem = problem or f"no results (log: {log_path})"
    results.problem = problem
    return results


#: The suites' pytest processes running now, ended by ``_stop`` on SIGTERM or SIGINT.
_RUNNING: set[subprocess.Popen[bytes]] = set()


def _stop(signum: int, _frame: object) -> None:
    """End the suites' runs and leave through the brokers' context managers (which stop
    the bundled broker and the RabbitMQ node) instead of dying with them running."""
    for process in list(_RUNNING):
        process.kill()
    raise SystemExit(128 + signum)


def read_junit(path: Path) -> Results:
    """Outcomes from pytest's junit xml: failed (a failure or an error, in the test or its
    fixtures), skipped, or passed."""
    results = Results()
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        if results.outcomes.get(test) != "failed":  # a teardown error after a pass
            results.outcomes[test] = outcome
    return results


def read_expected(path: Path) -> dict[str, str]:
    """``suite test-id  # reason`` per line; a line without a reason is refused."""
    expected = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        test, _, reason = line.partition("#")
        if not reason.strip():
            raise SystemExit(f"{path}:{number}: an expected difference needs '# reason'")
        expected[" ".join(test.split())] = reason.strip()
    return expected


def read_baseline(path: Path) -> dict[str, Results]:
    """RabbitMQ's outcomes as recorded by ``write_baseline``: every test listed passed."""
    recorded: dict[str, Results] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            suite, test = line.split(" ", 1)
            recorded.setdefault(suite, Results()).outcomes[test] = "passed"
    return recorded


def write_baseline(path: Path, results: dict[tuple[str, str], Results], version: str) -> None:
    lines = [
        f"# Tests of the peer suites that passed on RabbitMQ {version}, written by",
        "# `bash scripts/peer-suites.sh --write-baseline` (both brokers); CI compares the",
        "# bundled broker's outcomes with these. One per line: <suite> <test id>.",
    ]
    for (suite, broker), r in sorted(results.items()):
        if broker == "rabbitmq":
            lines += sorted(f"{suite} {t}" for t, o in r.outcomes.items() if o == "passed")
    path.write_text("\n".join(lines) + "\n")


# -- report ---------------------------------------------------------------------------------


def report(results: dict[tuple[str, str], Results], expected: dict[str, str]) -> int:
    """Print the table and every test that passes on RabbitMQ and fails on ours; the exit
    status (see the module's docstring)."""
    print(f"{'suite':<18} {'broker':<22} {'passed':>7} {'failed':>7} {'skipped':>8} {'time':>7}")
    for (suite, broker), r in results.items():
        took = f"{r.seconds:>6.0f}s" if r.seconds else "      -"
        print(
            f"{suite:<18} {broker:<22} {r.count('passed'):>7} {r.count('failed'):>7}"
            f" {r.count('skipped'):>8} {took}" + (f"  {r.problem}" if r.problem else "")
        )
    status = 2 if any(r.problem for r in results.values()) else 0
    unexpected: list[str] = []
    known: list[str] = []
    for suite in dict.fromkeys(s for s, _ in results):
        ours = results.get((suite, "bundled"))
        theirs = results.get((suite, "rabbitmq")) or results.get((suite, "rabbitmq (baseline)"))
        if ours is None or theirs is None:
            continue
        for test, outcome in theirs.outcomes.items():
            if outcome == "passed" and ours.outcomes.get(test) == "failed":
                (known if f"{suite} {test}" in expected else unexpected).append(f"{suite} {test}")
    print(f"\npassed on RabbitMQ, failed on the bundled broker: {len(unexpected)}")
    for line in unexpected:
        print(f"  {line}")
    if known:
        print(f"expected differences ({EXPECTED_FILE.name}): {len(known)}")
        for line in known:
            print(f"  {line}  # {expected[line]}")
    return max(status, 1 if unexpected else 0)


def _run_against(
    broker: str,
    suites: list[Suite],
    options: argparse.Namespace,
    certs: Path,
) -> dict[tuple[str, str], Results]:
    """Start ``broker``, run the suites against it (side by side with ``--parallel``)."""
    results_dir = options.cache / "results"
    tls_port = AIORMQ_TLS_PORT if SUITES["aiormq"] in suites else free_port()
    if broker == "bundled":
        context = bundled_broker(certs, tls_port, results_dir)
    else:
        context = rabbitmq_broker(certs, tls_port, options.rabbitmq_major)
    with (
        context as url,
        concurrent.futures.ThreadPoolExecutor(len(suites) if options.parallel else 1) as pool,
    ):
        print(f"== {broker} at {url}: {', '.join(s.key for s in suites)}", file=sys.stderr)
        runs = {
            suite.key: pool.submit(
                run_suite,
                suite,
                options.cache,
                (url, tls_port),
                results_dir / f"{suite.key}-{broker}.xml",
                options.timeout,
                options.keyword,
            )
            for suite in suites
        }
        return {(key, broker): run.result() for key, run in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", choices=sorted(SUITES))
    parser.add_argument("--broker", action="append", choices=["bundled", "rabbitmq"])
    parser.add_argument("--rabbitmq-major", type=int, default=4, choices=[3, 4])
    parser.add_argument("--cache", type=Path, default=PROJECT / ".peer-venv")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds per suite and broker (default 1800)"
    )
    parser.add_argument(
        "--parallel", action="store_true", help="run the suites against a broker side by side"
    )
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help=f"record RabbitMQ's passes in {BASELINE_FILE.name} (needs --broker rabbitmq)",
    )
    parser.add_argument("-k", dest="keyword", help="only these tests (pytest -k), for a rerun")
    options = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    suites = [SUITES[s] for s in options.suite or SUITES]
    brokers = options.broker or ["bundled", "rabbitmq"]
    if options.write_baseline and ("rabbitmq" not in brokers or options.keyword):
        parser.error("--write-baseline needs a whole run against RabbitMQ (--broker rabbitmq)")
    expected = read_expected(EXPECTED_FILE)
    (options.cache / "results").mkdir(parents=True, exist_ok=True)
    for suite in suites:
        install(suite, options.cache)
    certs = _certs(options.cache)
    results: dict[tuple[str, str], Results] = {}
    for broker in brokers:
        results.update(_run_against(broker, suites, options, certs))
    if "rabbitmq" not in brokers:
        recorded = read_baseline(BASELINE_FILE)
        for suite in suites:
            results[(suite.key, "rabbitmq (baseline)")] = recorded.get(suite.key, Results())
    if options.write_baseline:
        found = find_rabbitmq(options.rabbitmq_major)
        write_baseline(
            BASELINE_FILE, results, found.version if found else str(options.rabbitmq_major)
        )
    ordered = {key: results[key] for s in suites for key in results if key[0] == s.key}
    return report(ordered, expected)


if __name__ == "__main__":
    sys.exit(main())
