"""Exchanges and their routing structures, one class per exchange type.

Routing is precomputed where it can be: direct exchanges are a dict lookup, topic exchanges
a trie of binding-key words whose results are cached per routing key until the bindings
change. A destination is anything hashable the virtual host binds (a queue or an exchange).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, ClassVar

Destination = Hashable
#: Bindings are identified by destination, key and arguments (arguments as a hashable key).
BindingKey = tuple[Destination, str, str]

_TOPIC_CACHE_LIMIT = 4096


def arguments_key(arguments: Mapping[str, Any] | None) -> str:
    """A hashable, order-independent identity of a binding's arguments."""
    return repr(sorted((arguments or {}).items())) if arguments else ""


class Exchange:
    """An exchange: its declaration and its bindings. Subclasses implement ``route``."""

    type_name: ClassVar[str]

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


class DirectExchange(Exchange):
    type_name = "direct"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._by_key: dict[str, dict[Destination, int]] = {}

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
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


class TopicExchange(Exchange):
    """Binding keys are dot-separated words; ``*`` matches one word and ``#`` zero or more."""

    type_name = "topic"

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._root = _TrieNode()
        self._cache: dict[str, tuple[Destination, ...]] = {}

    def route(self, routing_key: str, headers: Mapping[str, Any]) -> Iterable[Destination]:
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
