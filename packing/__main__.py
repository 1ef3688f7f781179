"""`python -m packing <subcommand>`: plan (dry-run provisioning), catalog (instance catalog), consolidate."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

USAGE = "usage: python -m packing {plan,catalog,consolidate,convert,history,replay,advise} ..."

# subcommand -> the module whose main(argv) runs it; imported only when chosen (each pulls in a different part
# of the engine, and `plan` should not pay for the disruption engine's start-up)
COMMANDS = {
    "plan": "packing.plan_cli",
    "catalog": "packing.catalog.cli",
    "consolidate": "packing.disruption.cli",
    "convert": "packing.convert_cli",
    "history": "packing.history_cli",
    "advise": "packing.advise_cli",
    "replay": "packing.replay.cli",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not args:
        print(f"error: {USAGE} (a subcommand is required)", file=sys.stderr)
        return 2
    cmd, rest = args[0], args[1:]
    module = COMMANDS.get(cmd)
    if module is None:
        print(f"error: unknown subcommand {cmd[:40]!r} ({USAGE})", file=sys.stderr)
        return 2
    return int(importlib.import_module(module).main(rest))


if __name__ == "__main__":
    sys.exit(main())
