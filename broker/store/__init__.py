"""Durability for the bundled broker: the message journal (group-committed, checksummed,
recovered after a crash), the topology file, spilling of queues larger than memory and the
resource monitor that blocks publishers. Pure storage: no AMQP, no asyncio.
The on-disk format is described in docs/storage-format.md."""

from .errors import StoreError
from .journal import CommitListener, Journal
from .message_codec import decode_message, encode_message
from .monitor import ResourceMonitor
from .spill import SpillFifo
from .store import Store, default_data_dir
from .topology import BindingDef, ExchangeDef, PermissionDef, QueueDef, Topology, UserDef

__all__ = [
    "BindingDef",
    "CommitListener",
    "ExchangeDef",
    "Journal",
    "PermissionDef",
    "QueueDef",
    "ResourceMonitor",
    "SpillFifo",
    "Store",
    "StoreError",
    "Topology",
    "UserDef",
    "decode_message",
    "default_data_dir",
    "encode_message",
]
