"""The AMQP side of the broker: asyncio connections and channels driving the model."""
