"""`python -m packing <subcommand>`: plan (dry-run provisioning), catalog (instance catalog), consolidate."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = "usage: python -m packing {plan,catalog,consolidate} ..."


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not args:
        print(f"error: {USAGE} (a subcommand is required)", file=sys.stderr)
        return 2
    cmd, rest = args[0], args[1:]
    if cmd == "plan":
        from packing.plan_cli import main as plan_main

        return plan_main(rest)
    if cmd == "catalog":
        try:
            from packing.catalog.cli import main as catalog_main
        except ImportError:
            print(
                "packing catalog: the instance catalog is not installed (packing.catalog.cli missing)",
                file=sys.stderr,
            )
            return 2
        return int(catalog_main(rest))
    if cmd == "consolidate":
        # issue 5 (disruption engine) plugs in here: packing.disruption.cli.main(rest)
        try:
            from packing.disruption.cli import main as consolidate_main
        except ImportError:
            print("packing consolidate: not implemented yet", file=sys.stderr)
            return 2
        return int(consolidate_main(rest))
    print(f"error: unknown subcommand {cmd[:40]!r} ({USAGE})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
