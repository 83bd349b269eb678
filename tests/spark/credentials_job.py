"""A query logged in with the options ``username`` and ``password``, run in a child process
so that everything Spark's JVM, its Python workers and the connector print (at log level
INFO) can be read: a stream from one classic queue to another, its plans, its progress, and
a batch read with a wrong password. The password comes in the environment variable
``PASSWORD``; the wrong one is it with a suffix.

    python -m tests.spark.credentials_job URL USER SOURCE TARGET SCRATCH
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from amqp_spark.datasource import register
from testbed.spark import local_session


def main(url: str, user: str, source: str, target: str, scratch: str) -> None:
    spark = local_session(Path(scratch))
    spark.sparkContext.setLogLevel("INFO")
    register(spark)
    login = {"uri": url, "username": user, "password": os.environ["PASSWORD"]}
    checkpoint = str(Path(scratch) / "checkpoint")
    df = (
        spark.readStream.format("amqp")
        .options(**login, queue=source, checkpointLocation=checkpoint)
        .load()
    )
    df.explain(True)
    query = (
        df.select("body")
        .writeStream.format("amqp")
        .options(**login, routingKey=target, checkpointLocation=checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(180):
        sys.exit("the AvailableNow run did not end within 180 s")
    query.explain(True)
    print("progress:", query.lastProgress, flush=True)
    wrong = {**login, "password": login["password"] + "-wrong"}
    try:
        spark.read.format("amqp").options(**wrong, queue=source).load().collect()
    except Exception as exc:  # noqa: BLE001 - what it says is what is checked
        print("wrong password:", exc, flush=True)
    spark.stop()
    print("job done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
