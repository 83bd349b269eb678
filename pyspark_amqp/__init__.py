"""Makes ``format("amqp")`` work after ``pip install``: Spark registers the ``DefaultSource``
of every installed top-level ``pyspark_*`` module under its ``name()``."""

from amqp_spark.datasource import AMQPDataSource as DefaultSource

__all__ = ["DefaultSource"]
