"""The reading side of the ``amqp`` Data Source (imports pyspark/pyarrow only where needed)."""
