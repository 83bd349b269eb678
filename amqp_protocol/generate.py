"""``python -m amqp_protocol.generate``: write the modules of ``amqp_protocol/generated`` from
the spec XML files; ``--check`` only says which differ from what the XML generates (and
exits 1), as the test suite does.

The generator (``codegen``: the XML reader and the writers) is imported by this command and
the tests alone: the protocol package runs on the checked-in modules without it.
"""

from __future__ import annotations

import argparse
import sys

from .codegen.modules import GENERATED, generated_modules, stale_modules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amqp_protocol.generate", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a module is out of date"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_modules()
        for name in stale:
            print(f"out of date: {GENERATED / name}")
        return 1 if stale else 0
    for name, text in generated_modules().items():
        path = GENERATED / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
