"""The one error of the management plane that its caller handles: a taken address. It has a
module of its own so that the CLI can catch it without importing aiohttp."""

from __future__ import annotations


class ManagementPortError(OSError):
    """The management listener could not bind its address."""
