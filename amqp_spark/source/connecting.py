"""Opening connections for the source: a bounded retry and an error that says what to fix."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from amqp_spark.options import redact_uri

if TYPE_CHECKING:
    from amqp_spark.client import Connection

#: Seconds between attempts: doubling from the first, capped at the last.
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 8.0


class BrokerUnavailable(RuntimeError):
    """The broker could not be reached within the allowed attempts."""


def connect_with_retry(uri: str, attempts: int, purpose: str) -> Connection:
    """A connection to ``uri``, trying ``1 + attempts`` times with a doubling pause.

    Never waits forever: the client bounds each attempt with its ``connection_timeout``
    and the number of attempts is bounded here. The error names the broker (password
    redacted), the attempts and the last cause.
    """
    from amqp_spark.client import ClientError, connect

    pause, last_error = BACKOFF_FIRST, None
    for attempt in range(attempts + 1):
        if attempt:
            time.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX)
        try:
            return connect(uri, client_properties={"connection_name": f"amqp-spark {purpose}"})
        except (ClientError, OSError) as e:
            last_error = e
    raise BrokerUnavailable(
        f"amqp source ({purpose}): cannot connect to {redact_uri(uri)} after {attempts + 1} "
        f"attempt(s): {last_error!r}. Check the 'uri' option and that the broker is up; "
        "'maxReconnectAttempts' sets how often to retry."
    ) from last_error
