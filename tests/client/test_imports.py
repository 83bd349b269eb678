"""What importing the client costs: every Python process Spark starts for the connector (the
source's runner, the planners, the executors' workers) imports it, on the way to the first
batch."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_client_loads_only_the_0_9_1_generated_module() -> None:
    """0-9, 0-8 and the 0-10 draft load when first named: importing the three after the
    client takes ~0.12 s of CPU (``time.process_time()`` around their imports, best of 7)."""
    probe = (
        "import json, sys; import amqp_spark.client, amqp_spark.source.stream_reader; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('amqp_protocol.gen'))))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    versions = {m for m in json.loads(found) if m.startswith("amqp_protocol.generated.spec_")}
    assert versions == {"amqp_protocol.generated.spec_0_9_1"}


def test_the_other_versions_load_when_first_named() -> None:
    probe = (
        "import amqp_protocol, amqp_protocol.versions as v; "
        "assert amqp_protocol.SPEC_0_9 is v.SPEC_0_9 is v.ALL_SPECS[1]; "
        "assert v.KNOWN_SPECS[-1] is amqp_protocol.SPEC_0_10; "
        "print([s.label for s in amqp_protocol.KNOWN_SPECS])"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert found.split() == ["['0-9-1',", "'0-9',", "'0-8',", "'0-10']"]
