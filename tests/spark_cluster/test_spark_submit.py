"""``spark-submit --master spark://...`` of a job file, as a user runs one on a cluster
(tests/spark_cluster/queue_to_exchange_job.py): the job's driver is a process of its own,
``format("amqp")`` comes from ``pip install`` alone (no ``register()``), and its executors
run on the test cluster beside the module's other application."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from testbed.spark_cluster import EXECUTOR_MEMORY, SparkCluster, spark_home
from tests.spark.conftest import Broker
from tests.spark.inputs import bodies
from tests.spark_cluster.conftest import taken_bodies

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("queue_to_exchange_job.py")
#: A job's whole life: its driver's JVM, its executors, one AvailableNow run, on a loaded
#: 2-core machine.
SUBMIT_TIMEOUT = 300


@pytest.fixture(params=["bundled"])
def broker_url(request: pytest.FixtureRequest, bundled_broker_url: str) -> str:
    """The bundled broker only: the other tests of the cluster cover RabbitMQ 4, and a job
    costs a driver's start-up (15-40 s)."""
    return bundled_broker_url


def test_spark_submit_of_a_job_moves_every_message_of_a_queue_to_an_exchange(
    broker: Broker, cluster: SparkCluster, tmp_path: Path
) -> None:
    source = broker.new_queue()
    exchange = f"submitted-{uuid.uuid4().hex[:8]}"
    broker.ch.exchange_declare(exchange, "fanout", auto_delete=True)
    target = broker.new_queue()
    broker.ch.queue_bind(target, exchange)
    broker.publish(source, bodies(400))

    submitted = subprocess.run(
        [
            str(spark_home() / "bin" / "spark-submit"),
            *("--master", cluster.master_url),
            *(
                "--conf",
                "spark.driver.host=127.0.0.1",
                "--conf",
                "spark.driver.bindAddress=127.0.0.1",
            ),
            *("--conf", "spark.ui.enabled=false", "--conf", "spark.cores.max=1"),
            *("--executor-cores", "1", "--executor-memory", EXECUTOR_MEMORY),
            *("--conf", f"spark.local.dir={tmp_path / 'local'}"),
            *(str(JOB), broker.url, source, exchange, str(tmp_path / "checkpoint")),
        ],
        env=cluster.environment(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SUBMIT_TIMEOUT,
    )

    log = "\n".join(submitted.stderr.splitlines()[-40:])
    assert submitted.returncode == 0, f"spark-submit exited {submitted.returncode}:\n{log}"
    assert broker.wait_ready(target, 400) == 400
    assert taken_bodies(broker, target) == bodies(400)
    declared = broker.ch.queue_declare(source, passive=True)
    assert (declared.consumer_count, declared.message_count) == (0, 0), "not every message acked"
