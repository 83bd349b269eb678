"""Credentials given as the options ``username`` and ``password`` log a source and a sink in
to a user made for the test (bundled broker, RabbitMQ 4), and the password shows neither in
``explain(True)`` of the read nor of the running query, nor in its progress, nor in the
error of a wrong password.

A password inside ``uri`` is printed by Spark itself in plans (measured: the read's
``StreamingRelationV2 ... [uri=...]`` on PySpark 4.0.5 and 4.3.0, and the sink's options in the
running query's plan on 4.0.5): Spark redacts option values by key, and the source cannot
change how its options are printed (docs/security.md). The connector warns about it
(tests/spark/test_credential_options.py) and shows it nowhere itself.

What Spark's Python workers print reaches the JVM's stderr, which pytest's ``capfd`` does not
see (measured): the connector's messages are checked where they are made, in
test_credential_options.py, and everything a query's process prints is read from a child
process (tests/spark/credentials_job.py)."""

from __future__ import annotations

import os
import subprocess
import sys
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

    def url_with_password(self) -> str:
        return self.url.replace("://", f"://{USER}:{self.password}@", 1)

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
    """What a query showed: its plans as ``explain(True)`` prints them, and its progress."""

    read_plan: str
    query_plan: str
    progress: str


def copy_queue(
    spark: SparkSession,
    credentials: dict[str, str],
    queues: tuple[str, str],
    checkpoint: Path,
    capfd: pytest.CaptureFixture[str],
) -> Shown:
    """Run a stream from the first of ``queues`` to the second, logged in with
    ``credentials`` (options), and what it showed."""
    source, target = queues
    df = (
        spark.readStream.format("amqp")
        .options(**credentials, queue=source, checkpointLocation=str(checkpoint))
        .load()
    )
    capfd.readouterr()
    df.explain(True)
    read_plan = capfd.readouterr().out
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
    query_plan = capfd.readouterr().out
    return Shown(read_plan, query_plan, "\n".join(map(str, query.recentProgress)))


def test_username_and_password_options_log_in_and_show_nowhere(
    login: Login, amqp_spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    source, target = login.new_queue(messages=5), login.new_queue()
    credentials = {"uri": login.url, "username": USER, "password": login.password}
    shown = copy_queue(amqp_spark, credentials, (source, target), tmp_path / "ck", capfd)
    assert login.ready(target) == 5
    assert "amqp" in shown.read_plan
    assert "StreamingDataSourceV2" in shown.query_plan  # the running query's plan
    assert "numInputRows" in shown.progress
    for where, text in vars(shown).items():
        assert login.password not in text, f"the password shows in the {where}"


def test_a_password_inside_uri_works_and_stays_out_of_the_progress(
    login: Login, amqp_spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Spark's plans show it (see the module docstring); its progress does not."""
    source, target = login.new_queue(messages=5), login.new_queue()
    credentials = {"uri": login.url_with_password()}
    shown = copy_queue(amqp_spark, credentials, (source, target), tmp_path / "ck", capfd)
    assert login.ready(target) == 5
    assert "numInputRows" in shown.progress
    assert login.password not in shown.progress


@pytest.mark.parametrize("where", ["option", "uri"])
def test_a_wrong_password_fails_reads_and_writes_clearly_without_showing_it(
    login: Login, amqp_spark: SparkSession, where: str
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


# One broker: what is printed is Spark's and the connector's (a JVM start costs ~1 min).
@pytest.mark.parametrize("login", ["bundled"], indirect=True)
def test_nothing_spark_or_the_connector_prints_shows_the_password(
    login: Login, tmp_path: Path
) -> None:
    """Everything a query's process prints at log level INFO (the JVM's log, the Python
    workers', the connector's, its plans, its progress, the error of a wrong password), read
    from a child process's stdout and stderr."""
    source, target = login.new_queue(messages=5), login.new_queue()
    job = [sys.executable, "-m", "tests.spark.credentials_job", login.url, USER]
    done = subprocess.run(
        [*job, source, target, str(tmp_path)],
        env={**os.environ, "PASSWORD": login.password},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    printed = done.stdout
    assert done.returncode == 0, printed[-3000:]
    assert login.ready(target) == 5
    # what was read is the whole output: the JVM's INFO log, the plans, the progress, the error
    assert " INFO " in printed and "== Physical Plan ==" in printed, printed[-3000:]
    assert "numInputRows" in printed and "wrong password:" in printed
    assert "job done" in printed
    assert login.password not in printed
