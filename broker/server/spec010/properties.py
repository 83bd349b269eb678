"""Basic properties between the 0-10 draft and the broker's model.

The model keeps every message's properties as 0-9-1's (``model.message``: a stored message
is decoded with them, and a delivery to a 0-9-1 or 0-9 consumer sends their encoded header
as it is). The draft's basic properties are 0-9-1's without ``cluster-id``, but its field
tables (the ``headers`` property) use the draft's own type codes: a header encoded by one
cannot be decoded by the other, so properties cross the dialect's boundary as values.
"""

from __future__ import annotations

from typing import Any

from amqp_protocol import SPEC_0_9_1, SPEC_0_10, Properties

_MODEL = SPEC_0_9_1.properties("basic")
_DRAFT = SPEC_0_10.properties("basic")
_DRAFT_FIELDS = frozenset(_DRAFT.field_names)


def to_model(properties: Properties) -> Any:
    """A 0-10 client's basic properties as the model keeps them."""
    return _MODEL(**properties.present())


def to_draft(properties: Properties) -> Properties:
    """The model's basic properties as a 0-10 consumer receives them (cluster-id, which the
    draft does not have, is left out)."""
    return _DRAFT(**{k: v for k, v in properties.present().items() if k in _DRAFT_FIELDS})
