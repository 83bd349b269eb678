"""A Spark job as a user submits it to a cluster: every message of a classic queue to an
exchange, in one AvailableNow run of a streaming query.

    spark-submit --master spark://HOST:7077 queue_to_exchange_job.py URI QUEUE EXCHANGE CHECKPOINT

``format("amqp")`` needs no ``register()``: ``pip install amqp-spark`` on the driver's and
every worker's Python is enough (``PYSPARK_PYTHON`` names that Python).
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def main(uri: str, queue: str, exchange: str, checkpoint: str) -> None:
    spark = SparkSession.builder.appName("amqp-queue-to-exchange").getOrCreate()
    messages = spark.readStream.format("amqp").option("uri", uri).option("queue", queue).load()
    query = (
        messages.select("body", "routing_key")
        .writeStream.format("amqp")
        .option("uri", uri)
        .option("exchange", exchange)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(f"usage: {sys.argv[0]} URI QUEUE EXCHANGE CHECKPOINT")
    main(*sys.argv[1:])
