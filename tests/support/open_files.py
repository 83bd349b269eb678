"""A test's own open-files limit: a fresh machine starts it with a soft RLIMIT_NOFILE of
1024, fewer than a test of a thousand connections needs in one process."""

from __future__ import annotations

import resource

from tests.support.fixtures import _fail_in_ci_else_skip


def raise_open_files_limit(needed: int) -> None:
    """Raise this process's soft limit to ``needed`` descriptors, when lower. A hard limit
    below it fails the test in CI and skips it elsewhere, saying so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard < needed:
        _fail_in_ci_else_skip(
            f"the test needs {needed} open files; the hard limit is {hard} (ulimit -Hn)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
