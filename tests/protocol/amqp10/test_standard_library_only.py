"""``amqp_protocol.amqp10`` imports nothing but the standard library (and its own package):
the broker and the source's executors use it without extra dependencies."""

from __future__ import annotations

import json
import subprocess
import sys


def test_amqp10_imports_only_the_standard_library() -> None:
    program = (
        "import json, sys; import amqp_protocol.amqp10; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
        ).stdout
    )
    foreign = [
        name
        for name in loaded
        if name not in sys.stdlib_module_names and name != "amqp_protocol" and name[0] != "_"
    ]
    assert foreign == []
