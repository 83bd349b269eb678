"""Credentials given as the options ``username`` and ``password`` log a source and a sink in
to a user made for the test (bundled broker, RabbitMQ 4), and the password shows nowhere:
not in ``explain(True)`` of the read or of the running query, not in its progress, not in
anything Spark, its Python workers or the connector print (the test process's stdout and
stderr, which the JVM and the workers share), not in the error of a wrong password.

A password inside ``uri`` is printed by Spark itself in plans (``StreamingRelationV2 ...
[uri=...]``: Spark redacts option values by key, and the source cannot change how its options
are printed; docs/security.md): the connector warns about it
(tests/spark/test_credential_options.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pyspark.sql import SparkSession

from amqp_spark.client import connect
from broker import Broker
from testbed.rabbitmq import rabbitmqctl

pytestmark = [pytest.mark.spark]

USER = "creds.user"


@dataclass(frozen=True)
class Login:
    """A broker where ``USER`` may do anything in vhost "/" with ``password``."""

    guest_url: str
    password: str

    @property
    def url(self) -> str:
        """The broker's URI without user or password."""
        parts = urlsplit(self.guest_url)
        return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()

    def new_queue(self, messages: int = 0) -> str:
        name = f"creds-{uuid.uuid4().hex[:8]}"
        with connect(self.guest_url) as conn:
            ch = conn.channel()
            ch.queue_declare(name)
            ch.confirm_select()
            for i in range(messages):
                ch.basic_publish("", name, f"m{i}".encode())
            ch.wait_for_confirms(timeout=60)
        return name

    def ready(self, queue: str) -> int:
        with connect(self.guest_url) as conn:
            return int(conn.channel().queue_declare(queue, passive=True).message_count)


@pytest.fixture(
    scope="module",
    params=[pytest.param("bundled"), pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)],
)
def login(request: pytest.FixtureRequest) -> Iterator[Login]:
    password = f"pw-{uuid.uuid4().hex}"
    if request.param == "bundled":
        everything = {"/": {"configure": ".*", "write": ".*", "read": ".*"}}
        users = {
            "guest": {"password": "guest", "permissions": everything},
            USER: {"password": password, "permissions": everything},
        }
        with Broker(config={"users": users}) as b:
            yield Login(b.url, password)
        return
    url: str = request.getfixturevalue("rabbitmq_url")
    rabbitmqctl(url, "add_user", USER, password)
    try:
        rabbitmqctl(url, "set_permissions", USER, ".*", ".*", ".*")
        yield Login(url, password)
    finally:
        rabbitmqctl(url, "delete_user", USER)


@dataclass(frozen=True)
class Shown:
    """What a query showed: its plans as ``explain(True)`` prints them, its progress, and
    everything else the test process, Spark's JVM and its Python workers printed."""

    read_plan: str
    query_plan: str
    progress: str
    output: str


def copy_queue(
    spark: SparkSession,
    credentials: dict[str, str],
    queues: tuple[str, str],
    checkpoint: Path,
    capfd: pytest.CaptureFixture[str],
) -> Shown:
    """Run a stream from the first of ``queues`` to the second, logged in with
    ``credentials`` (options), and what it showed (the output until some seconds after)."""
    source, target = queues
    output = capfd.readouterr().err
    df = (
        spark.readStream.format("amqp")
        .options(**credentials, queue=source, checkpointLocation=str(checkpoint))
        .load()
    )
    df.explain(True)
    read = capfd.readouterr()
    query = (
        df.select("body")
        .writeStream.format("amqp")
        .options(**credentials, routingKey=target)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the AvailableNow run did not end within 180 s"
    assert query.exception() is None, query.exception()
    query.explain(True)
    ran = capfd.readouterr()
    progress = "\n".join(map(str, query.recentProgress))
    return Shown(read.out, ran.out, progress, output + read.err + ran.err + later(capfd))


def later(capfd: pytest.CaptureFixture[str], timeout: float = 10.0) -> str:
    """What is printed within ``timeout`` s: the JVM passes on what Spark's Python workers
    print some seconds late (measured)."""
    printed = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        printed += "".join(capfd.readouterr())
    return printed


def test_username_and_password_options_log_in_and_show_nowhere(
    login: Login, amqp_spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source, target = login.new_queue(messages=5), login.new_queue()
    credentials = {"uri": login.url, "username": USER, "password": login.password}
    shown = copy_queue(amqp_spark, credentials, (source, target), tmp_path / "ck", capfd)
    assert login.ready(target) == 5
    assert "amqp" in shown.read_plan
    assert "StreamingDataSourceV2" in shown.query_plan  # the running query's plan
    for where, text in vars(shown).items():
        assert login.password not in text, f"the password shows in the {where}"
    assert "holds a password" not in shown.output


@pytest.mark.parametrize("where", ["option", "uri"])
def test_a_wrong_password_fails_reads_and_writes_clearly_without_showing_it(
    login: Login, amqp_spark: SparkSession, where: str, capfd: pytest.CaptureFixture[str]
) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    credentials = (
        {"uri": login.url, "username": USER, "password": wrong}
        if where == "option"
        else {"uri": login.url.replace("://", f"://{USER}:{wrong}@", 1)}
    )
    queue = login.new_queue(messages=1)
    reading = amqp_spark.read.format("amqp").options(**credentials, queue=queue)
    writing = amqp_spark.createDataFrame([(b"x",)], "body binary").write.format("amqp")
    for attempt in (
        lambda: reading.option("maxReconnectAttempts", "0").load().collect(),
        lambda: (
            writing.options(**credentials, routingKey=queue, maxReconnectAttempts="0")
            .mode("append")
            .save()
        ),
    ):
        with pytest.raises(Exception) as caught:
            attempt()
        assert USER in str(caught.value)
        assert "ACCESS_REFUSED" in str(caught.value) or "403" in str(caught.value)
        assert wrong not in str(caught.value)
    assert wrong not in str(capfd.readouterr())
