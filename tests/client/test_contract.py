"""The channel speaks to its connection through the contract (``amqp_spark/client/abc.py``),
not through the connection's module: ``channel.py`` and ``publishing.py`` never import
``connection.py``, even under TYPE_CHECKING. Read from the source with ``ast``. That no module
reads another object's private members is ``tests/test_private_reach.py``'s to check."""

from __future__ import annotations

import ast
from pathlib import Path

import amqp_spark.client

CLIENT = Path(amqp_spark.client.__file__).parent


def _sibling_imports(path: Path) -> set[str]:
    """The modules of the client ``path`` imports (``from .x import ...``)."""
    return {
        node.module
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    }


def test_the_channel_and_publishing_depend_on_the_contract_not_on_the_connection() -> None:
    for module in ("channel.py", "publishing.py", "abc.py"):
        assert "connection" not in _sibling_imports(CLIENT / module), module
    assert "abc" in _sibling_imports(CLIENT / "channel.py")
    assert "abc" in _sibling_imports(CLIENT / "publishing.py")
