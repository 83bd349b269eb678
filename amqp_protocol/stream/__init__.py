"""RabbitMQ's stream protocol, sans-IO: the chunk format, the commands and a connection.

See ``docs/stream-protocol.md``.
"""
