"""The bundled AMQP 0-9-1 broker: ``Broker`` runs it in-process, ``amqp-broker`` as a program."""

__version__ = "0.1.0"

from .runner import Broker  # noqa: E402

__all__ = ["Broker", "__version__"]
