"""A CommitListener for tests: collects what the journal reports, from its writer thread."""

from __future__ import annotations

import threading

from broker.store import StoreError


class CollectingListener:
    def __init__(self) -> None:
        self.committed_tokens: list[object] = []
        self.groups = 0
        self.failed_tokens: list[object] = []
        self.error: StoreError | None = None
        self._cond = threading.Condition()

    def committed(self, tokens: list[object]) -> None:
        with self._cond:
            self.committed_tokens.extend(tokens)
            self.groups += 1
            self._cond.notify_all()

    def failed(self, tokens: list[object], error: StoreError) -> None:
        with self._cond:
            self.failed_tokens.extend(tokens)
            self.error = error
            self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = 10.0) -> None:
        """Until ``count`` tokens were committed or failed (AssertionError after ``timeout``)."""
        with self._cond:
            done = self._cond.wait_for(
                lambda: len(self.committed_tokens) + len(self.failed_tokens) >= count, timeout
            )
        assert done, f"only {len(self.committed_tokens)} of {count} tokens committed"
