"""The demo and its local-session helper, kept out of the library package ``amqp_spark``
(which imports nothing of the bundled broker): ``python -m amqp_spark_demo`` runs the demo
(``scripts/demo.sh``), ``amqp_spark_demo.local_spark.local_session`` makes the SparkSession of
the demo, the quickstart notebook and the tests."""
