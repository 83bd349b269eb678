"""Opening connections and queues for the source: a bounded retry, and errors that say
what to fix."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from amqp_spark.options import OptionError, redact_uri

if TYPE_CHECKING:
    from amqp_spark.client import Channel, Connection

T = TypeVar("T")


class BrokerUnavailable(RuntimeError):
    """The broker could not be reached within the allowed attempts."""


def open_with_retry(
    uri: str,
    attempts: int,
    purpose: str,
    setup: Callable[[Connection], T],
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Connection, T]:
    """A connection to ``uri`` and what ``setup`` (declares, consumers) made on it, trying
    ``1 + attempts`` times with a doubling pause (``client.backoff``; ``sleep`` waits).

    A ``uri`` naming several hosts (the ``addresses`` option) tries each of them in one
    attempt, from the one this process's rotation puts first (``client.addresses``).
    Tried again: a broker that cannot be reached or drops the connection during ``setup``,
    and a queue the broker cannot serve yet (``QueueUnavailable``: RabbitMQ answers so for a
    moment after a restart, and while a quorum queue elects a leader). Any other error of
    ``setup`` is final. Never waits forever: the client bounds each connection attempt with
    its ``connection_timeout`` and the number of attempts is bounded here. The error names
    the broker(s) (password redacted), the attempts and the last cause, which names every
    address tried and why it failed.
    """
    from amqp_spark.client import ChannelClosed, ClientError, backoff, connect

    last_error: BaseException | None = None
    for _ in backoff.attempts(attempts, sleep):
        try:
            conn = connect(uri, client_properties={"connection_name": f"amqp-spark {purpose}"})
        except (ClientError, OSError) as e:
            last_error = e
            continue
        try:
            return conn, setup(conn)
        except ChannelClosed:
            conn.close()
            raise
        except (QueueUnavailable, ClientError) as e:
            last_error = e
        except BaseException:
            conn.close()
            raise
        conn.close()
    what = "use" if isinstance(last_error, QueueUnavailable) else "connect to"
    raise BrokerUnavailable(
        f"amqp source ({purpose}): cannot {what} {redact_uri(uri)} after {attempts + 1} "
        f"attempt(s): {last_error}. Check the 'uri' and 'addresses' options and that the "
        "broker is up; 'maxReconnectAttempts' sets how often to retry."
    ) from last_error


class QueueUnavailable(RuntimeError):
    """A queue the broker has but cannot serve yet: RabbitMQ answers 404 "home node ... is
    down or inaccessible" for a durable queue whose node is still recovering it (measured:
    a stream queue, for a moment after ``rabbitmqctl start_app``), and 406 "stream queue
    ... does not have a running replica on the local node" for a stream whose replica on
    the node is restarting (measured: 4.0.5, seconds after its leader's node was killed)."""


#: RabbitMQ's reply texts for a queue that exists but is not available yet.
_RECOVERING = ("down or inaccessible", "does not have a running replica")


#: Reply codes of a queue the server refuses to let us use as asked.
_NOT_FOUND, _PRECONDITION_FAILED = 404, 406


@contextlib.contextmanager
def using_queue(queue: str, queue_type: str) -> Iterator[None]:
    """Turn the server's refusal of ``queue`` into an error naming the option to fix: a
    queue that does not exist (404; the source declares none), or one of another type than
    ``queueType`` says (RabbitMQ refuses stream arguments on a classic queue: 406). A queue
    not available yet becomes ``QueueUnavailable``, which ``open_with_retry`` tries again."""
    from amqp_spark.client import ChannelClosed

    try:
        yield
    except ChannelClosed as e:
        if e.reply_code in (_NOT_FOUND, _PRECONDITION_FAILED) and any(
            text in e.reply_text for text in _RECOVERING
        ):
            raise QueueUnavailable(f"queue {queue!r}: the broker says: {e.reply_text}") from e
        if e.reply_code == _NOT_FOUND:
            raise OptionError(
                "queue",
                queue,
                "names of queues that exist on the broker (the source declares none)",
                f"the broker says: {e.reply_text}",
            ) from e
        if e.reply_code == _PRECONDITION_FAILED and queue_type == "stream":
            raise not_a_stream(queue, f"the broker says: {e.reply_text}") from e
        raise


def consume_on_new_channel(
    conn: Connection,
    queue: str,
    queue_type: str,
    prefetch: int,
    arguments: dict[str, Any] | None = None,
) -> Channel:
    """A new channel on ``conn`` with ``prefetch``, consuming ``queue`` (refusals turned
    into errors by ``using_queue``)."""
    ch = conn.channel()
    ch.basic_qos(prefetch_count=prefetch)
    with using_queue(queue, queue_type):
        ch.basic_consume(queue, arguments=arguments)
    return ch


def not_a_stream(queue: str, why: str) -> OptionError:
    """The error of a query with ``queueType`` 'stream' reading a queue that is no stream."""
    return OptionError(
        "queueType",
        "stream",
        "'stream' for RabbitMQ stream queues, 'classic' for the others",
        f"queue {queue!r} is not a stream queue ({why}): set queueType 'classic'",
    )
