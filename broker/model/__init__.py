"""The broker's model: virtual hosts, exchanges and routing, queues with their messages and
consumers. Nothing here does I/O; the AMQP handlers in ``broker.server`` drive it, and it
reaches a client only through the ``DeliverySink`` its consumers name."""
