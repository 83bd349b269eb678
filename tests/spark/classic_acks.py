"""Whether a running query's source has acked everything of a classic queue, from its
progress reports (``messagesWaiting``: ready on the broker, received but unacked)."""

from __future__ import annotations

from pyspark.sql.streaming import StreamingQuery

from tests.spark.progress import as_dict


def nothing_waiting(query: StreamingQuery, queue: str) -> bool:
    """True once the query's last progress shows ``queue`` with nothing ready or unacked.
    The source acks a batch at the trigger after Spark commits it; an idle query reports
    that in a no-data progress, which Spark posts every 10 s."""
    progress = query.lastProgress
    if progress is None:
        return False
    waiting = as_dict(progress["sources"][0]["latestOffset"])["messagesWaiting"][queue]
    return bool(waiting == {"ready": 0, "unacked": 0})
