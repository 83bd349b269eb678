"""Arrow record batches -> what the stream writer publishes: per stream, the rows' publishing
ids and AMQP 1.0 messages.

A row is first made into the 0-9-1 message the sink sends over AMQP 0-9-1
(``messages.to_messages``: same columns, options, checks and ``message_id``), then into the
AMQP 1.0 message RabbitMQ 4 stores for such a publish (``amqp_protocol.amqp10.from_amqp091``),
so that a consumer reads the same properties back whichever protocol wrote the row. Its
publishing id is the row's in ``stream_ids``. The ``x-stream-filter-value`` header is also
handed out per message: over the stream protocol the filter value travels in the Publish
frame (version 2), which is what the stream's chunk filter is built from.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.stream.values import PublishedMessage
from amqp_spark.stream_filter import FILTER_VALUE_HEADER

from .columns import ColumnPlan
from .messages import MessageIds, to_messages
from .settings import SinkSettings
from .stream_ids import PublishingIds


@dataclass
class StreamRun:
    """The messages of a record batch for one stream, in row order."""

    stream: str
    messages: list[PublishedMessage] = field(default_factory=list)

    @property
    def filtered(self) -> bool:
        """Whether any message has a filter value (then Publish version 2 is needed)."""
        return any(m.filter_value is not None for m in self.messages)


def to_stream_runs(
    batch: pa.RecordBatch,
    plan: ColumnPlan,
    settings: SinkSettings,
    message_ids: MessageIds,
    publishing: PublishingIds,
    first_row: int,
    route: str | Mapping[str, str],
) -> list[StreamRun]:
    """The messages of ``batch`` (whose first row is row ``first_row`` of the partition) by
    stream: all to ``route`` when it is a stream's name, else to the partition stream that
    ``route`` maps each row's binding key to (a super stream's, chosen as over AMQP 0-9-1)."""
    ids = publishing.for_rows(first_row, batch.num_rows)
    rows = itertools.chain.from_iterable(
        run.messages for run in to_messages(batch, plan, settings, message_ids, first_row)
    )
    runs: dict[str, StreamRun] = {}
    for (key, body, properties), publishing_id in zip(rows, ids, strict=True):
        stream = route if isinstance(route, str) else route[key]
        run = runs.get(stream)
        if run is None:
            run = runs[stream] = StreamRun(stream)
        present = properties.present()
        headers = present.get("headers")
        filter_value = None if headers is None else headers.get(FILTER_VALUE_HEADER)
        run.messages.append(
            PublishedMessage(publishing_id, from_amqp091(present, body), filter_value)
        )
    return list(runs.values())
