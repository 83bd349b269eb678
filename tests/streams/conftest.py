"""The stream tests use the broker tests' pika ``connection`` to ``broker_url``."""

from tests.broker.conftest import connection

__all__ = ["connection"]
