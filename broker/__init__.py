"""The bundled AMQP 0-9-1 broker: ``Broker`` runs it in-process, ``amqp-broker`` as a program."""

from .runner import Broker
from .version import __version__

__all__ = ["Broker", "__version__"]
