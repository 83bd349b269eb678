"""A broker a test can restart (the ``restartable`` fixture of ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable


class Restartable:
    """A broker a test can restart: ``url`` and ``restart()``; ``bundled`` tells which."""

    def __init__(
        self, url: Callable[[], str], restart: Callable[[], None], *, bundled: bool
    ) -> None:
        self.url = url
        self.restart = restart
        self.bundled = bundled
