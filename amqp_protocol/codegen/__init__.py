"""The generator of ``amqp_protocol/generated``: the reader of the spec XML (``xml_spec``)
and the writers of the generated modules (``modules``, ``classes``, ``definitions``).

Only ``python -m amqp_protocol.generate`` and the tests import it; nothing the protocol
package, the client or the broker import at run time does.
"""
