"""``python -m amqp_spark_demo``: the demo (see ``amqp_spark_demo.orders``)."""

from amqp_spark_demo.orders import main

raise SystemExit(main())
