"""The one exception the store raises: it names the path and says what to do."""

from __future__ import annotations

from pathlib import Path


class StoreError(Exception):
    """The data directory cannot be used (or can no longer be written).

    ``path`` is the file or directory at fault and ``advice`` what the operator can do about
    it; both are in the message, so logging ``str(error)`` is enough.
    """

    def __init__(self, path: Path | str, problem: str, advice: str) -> None:
        self.path = Path(path)
        self.problem = problem
        self.advice = advice
        super().__init__(f"{self.path}: {problem}. {advice}")


def from_os_error(path: Path | str, action: str, error: OSError) -> StoreError:
    """A StoreError for an OSError met while doing ``action`` (e.g. "cannot write")."""
    import errno

    reason = error.strerror or str(error)
    if error.errno == errno.ENOSPC:
        advice = "Free disk space on that file system (or point --data-dir elsewhere)"
    elif error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        advice = (
            "Make the directory writable by the broker's user, or point --data-dir at a "
            "writable directory"
        )
    else:
        advice = "Check the file system and the file's permissions, or point --data-dir elsewhere"
    return StoreError(path, f"{action}: {reason}", advice)
