"""What the tests and the benchmarks both stand on: private RabbitMQ nodes, the local Spark
session and a standalone Spark cluster, the bundled broker in a process of its own, a raw
protocol client, pika traffic and a store's data directory made by hand.

Neither a test module nor a conftest: ``benchmarks/`` imports from here, never from ``tests/``
(tests/test_benchmarks_stand_apart.py checks it)."""
