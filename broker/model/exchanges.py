"""Exchanges and their routing structures, one class per exchange type.

Routing is precomputed where it can be: direct exchanges are a dict lookup, topic exchanges
a trie of binding-key words whose results are cached per routing key until the bindings
change. A destination is anything hashable the virtual host binds (a queue or an exchange).

Sender-selected distribution (RabbitMQ's extension): the ``CC`` and ``BCC`` headers of a
published message, arrays of strings, add routing keys to the one basic.publish names. The
exchanges that route by key (direct, topic) route by all of them and reach each destination
once; fanout and headers exchanges ignore them. The publishing channel validates the headers
(``check_sender_selected``) and removes ``BCC`` from the message it stores
(``without_bcc``), routing with the headers as published; the message keeps the ``BCC``
keys aside (``Message.blind_keys``), since dead-lettering routes by them again.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, ClassVar

from amqp_protocol import errors

from .field_types import amqp_type_name
from .stats import MessageStats

Destination = Hashable
#: Bindings are identified by destination, key and arguments (arguments as a hashable key).
BindingKey = tuple[Destination, str, str]

_TOPIC_CACHE_LIMIT = 4096
#: The headers whose arrays of strings add routing keys; the second is never delivered.
SENDER_SELECTED_HEADERS = ("CC", "BCC")
COPY_HEADER, BLIND_COPY_HEADER = SENDER_SELECTED_HEADERS


def header_keys(headers: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The routing keys the ``name`` header (``CC`` or ``BCC``) adds: its string entries
    (RabbitMQ skips entries of other types)."""
    value = headers.get(name)
    if not isinstance(value, list):
        return ()
    return tuple(key for key in value if isinstance(key, str))


def sender_selected_keys(headers: Mapping[str, Any]) -> list[str]:
    """The routing keys a message's ``CC`` and ``BCC`` headers add."""
    return [key for name in SENDER_SELECTED_HEADERS for key in header_keys(headers, name)]


def check_sender_selected(headers: Mapping[str, Any]) -> None:
    """406 PRECONDITION_FAILED, with RabbitMQ's text, when a ``CC`` or ``BCC`` header is
    present but not an array."""
    for name in SENDER_SELECTED_HEADERS:
        if name in headers and not isinstance(headers[name], list):
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - invalid message: {unacceptable_type_in_header,"
                f'"{name}",{amqp_type_name(headers[name])}}}'
            )


def without_bcc(properties: Any) -> tuple[Any, tuple[str, ...]]:
    """``properties`` (a basic Properties) less the ``BCC`` header (the same object when
    there is none), and the keys that header held. The headers table stays present, if
    empty, as RabbitMQ keeps it."""
    headers = properties.headers
    if not headers or BLIND_COPY_HEADER not in headers:
        return properties, ()
    kept = {k: v for k, v in headers.items() if k != BLIND_COPY_HEADER}
    stripped = type(properties)(**{**properties.present(), "headers": kept})
    return stripped, header_keys(headers, BLIND_COPY_HEADER)


def arguments_key(arguments: Mapping[str, Any] | None) -> str:
    """A hashable, order-independent identity of a binding's arguments."""
    return repr(sorted((arguments or {}).items())) if arguments else ""


class Exchange:
    """An exchange: its declaration and its bindings. Subclasses implement ``route``."""

    type_name: ClassVar[str]
    #: The policy applied to it (a ``policies.Policy``, set by ``Policies.apply_to_exchange``).
    policy: Any = None

    def __init__(
        self,
        name: str,
        *,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments = dict(arguments or {})
        ae = self.arguments.get("alternate-exchange")
        self.alternate_exchange: str | None = ae if isinstance(ae, str) and ae else None
        self.bindings: dict[BindingKey, dict[str, Any]] = {}
        self.stats = MessageStats()

    def __repr__(self) -> str:
        return f"<{self.type_name} exchange {self.name!r}>"

    def bind(self, destination: Destination, key: str, arguments: dict[str, Any]) -> bool:
        """Add a binding; False if it already existed."""
        bkey = (destination, key, arguments_key(arguments))
        if bkey in self.bindings:
            return False
        self.bindings[bkey] = arguments
        self._add(destination, key, arguments)
        return True

    def unbind(self, destination: Destination, key: str, arguments: dict[str, Any]) -> bool:
        """Remove a binding; False if there was none."""
        bkey = (destination, key, arguments_key(arguments))
        args = self.bindings.pop(bkey, None)
        if args is None:
            return False
        self._remove(destination, key, args)
        return True

    def unbind_all(self, destination: Destination) -> None:
        for bkey in [b for b in self.bindings if b[0] is destination]:
            self.unbind(destination, bkey[1], self.bindings[bkey])

    def destinations(self) -> set[Destination]:
        return {b[0] for b in self.bindings}

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
        raise NotImplementedError

    def _add(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        raise NotImplementedError

    def _remove(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        raise NotImplementedError


def _count(table: dict[Destination, int], destination: Destination, delta: int) -> None:
    """Reference-count a destination (several bindings may lead to the same one)."""
    n = table.get(destination, 0) + delta
    if n > 0:
        table[destination] = n
    else:
        table.pop(destination, None)


class KeyedExchange(Exchange):
    """An exchange that routes by key: by the published routing key and the keys the
    message's ``CC`` and ``BCC`` headers add, each destination once."""

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
        if headers and ("CC" in headers or "BCC" in headers):
            added = sender_selected_keys(headers)
            if added:
                found: dict[Destination, None] = {}
                for key in (routing_key, *added):
                    found.update(dict.fromkeys(self.route_key(key)))
                return found
        return self.route_key(routing_key)

    def route_key(self, routing_key: str) -> Iterable[Destination]:
        raise NotImplementedError


class DirectExchange(KeyedExchange):
    type_name = "direct"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._by_key: dict[str, dict[Destination, int]] = {}

    def route_key(self, routing_key: str) -> Iterable[Destination]:
        return self._by_key.get(routing_key, ())

    def _add(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        _count(self._by_key.setdefault(key, {}), destination, 1)

    def _remove(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        table = self._by_key[key]
        _count(table, destination, -1)
        if not table:
            del self._by_key[key]


class FanoutExchange(Exchange):
    type_name = "fanout"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._all: dict[Destination, int] = {}

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
        return self._all

    def _add(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        _count(self._all, destination, 1)

    def _remove(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        _count(self._all, destination, -1)


class _TrieNode:
    __slots__ = ("children", "destinations")

    def __init__(self) -> None:
        self.children: dict[str, _TrieNode] = {}
        self.destinations: dict[Destination, int] = {}


class TopicExchange(KeyedExchange):
    """Binding keys are dot-separated words; ``*`` matches one word and ``#`` zero or more."""

    type_name = "topic"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._root = _TrieNode()
        self._cache: dict[str, tuple[Destination, ...]] = {}

    def route_key(self, routing_key: str) -> Iterable[Destination]:
        hit = self._cache.get(routing_key)
        if hit is None:
            found: dict[Destination, None] = {}
            _match(self._root, routing_key.split("."), 0, found)
            hit = tuple(found)
            if len(self._cache) >= _TOPIC_CACHE_LIMIT:
                self._cache.clear()
            self._cache[routing_key] = hit
        return hit

    def _add(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        node = self._root
        for word in key.split("."):
            node = node.children.setdefault(word, _TrieNode())
        _count(node.destinations, destination, 1)
        self._cache.clear()

    def _remove(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        path = [self._root]
        words = key.split(".")
        for word in words:
            path.append(path[-1].children[word])
        _count(path[-1].destinations, destination, -1)
        # Prune the branch back to the first node still in use.
        for depth in range(len(words), 0, -1):
            node = path[depth]
            if node.destinations or node.children:
                break
            del path[depth - 1].children[words[depth - 1]]
        self._cache.clear()


def _match(node: _TrieNode, words: list[str], i: int, found: dict[Destination, None]) -> None:
    children = node.children
    if i == len(words):
        found.update(dict.fromkeys(node.destinations))
    else:
        child = children.get(words[i])
        if child is not None:
            _match(child, words, i + 1, found)
        child = children.get("*")
        if child is not None:
            _match(child, words, i + 1, found)
    hash_node = children.get("#")
    if hash_node is not None:
        for j in range(i, len(words) + 1):
            _match(hash_node, words, j, found)


class HeadersExchange(Exchange):
    """Matches message headers against binding arguments, per the binding's ``x-match``:
    ``all`` (default) or ``any``, ignoring ``x-`` arguments, or ``all-with-x``/``any-with-x``
    which compare those too. A binding argument with no value (void) matches on presence."""

    type_name = "headers"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._matchers: dict[tuple[Destination, str], tuple[bool, list[tuple[str, Any]]]] = {}
        self._refs: dict[tuple[Destination, str], int] = {}

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
        if BLIND_COPY_HEADER in headers:  # removed before routing: never matched
            headers = {k: v for k, v in headers.items() if k != BLIND_COPY_HEADER}
        found: dict[Destination, None] = {}
        for (destination, _), (match_all, pairs) in self._matchers.items():
            if destination not in found and _headers_match(match_all, pairs, headers):
                found[destination] = None
        return found

    def _add(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        mkey = (destination, arguments_key(arguments))
        self._refs[mkey] = self._refs.get(mkey, 0) + 1
        mode = arguments.get("x-match", "all")
        with_x = mode in ("all-with-x", "any-with-x")
        pairs = [
            (k, v)
            for k, v in arguments.items()
            if k != "x-match" and (with_x or not k.startswith("x-"))
        ]
        self._matchers[mkey] = (mode in ("all", "all-with-x"), pairs)

    def _remove(self, destination: Destination, key: str, arguments: dict[str, Any]) -> None:
        mkey = (destination, arguments_key(arguments))
        self._refs[mkey] -= 1
        if not self._refs[mkey]:
            del self._refs[mkey], self._matchers[mkey]


_ABSENT = object()


def _headers_match(
    match_all: bool, pairs: list[tuple[str, Any]], headers: Mapping[str, Any]
) -> bool:
    if match_all:
        for k, v in pairs:
            h = headers.get(k, _ABSENT)
            if h is _ABSENT or (v is not None and h != v):
                return False
        return True
    for k, v in pairs:
        h = headers.get(k, _ABSENT)
        if h is not _ABSENT and (v is None or h == v):
            return True
    return False


EXCHANGE_TYPES: dict[str, type[Exchange]] = {
    cls.type_name: cls for cls in (DirectExchange, FanoutExchange, TopicExchange, HeadersExchange)
}
