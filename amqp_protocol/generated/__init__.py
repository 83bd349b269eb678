"""Code generated from the spec XML by ``python -m amqp_protocol.generate``: do not edit.

Rerun the generator after changing the XML in ``spec/``, ``codegen`` or ``generate``; the test
suite fails while a module here differs from what they generate.
"""
