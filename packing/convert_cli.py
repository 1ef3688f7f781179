"""`python -m packing convert FILE... [--output yaml|json]`: Karpenter's legacy objects (v1alpha5 Provisioner,
v1alpha1 AWSNodeTemplate, v1beta1 NodePool and EC2NodeClass) as karpenter.sh/v1 and karpenter.k8s.aws/v1 objects.

YAML (the default) prints the objects as a multi-document stream on stdout and the report, one line per field, on
stderr; JSON prints `{"objects": [...], "report": [...]}` on stdout. Objects of other kinds are printed as they
are. Exit 0, or 2 with one line naming the file, the document and the field.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from packing.cli_arguments import CliParser
from packing.documents import DEFAULT_MAX_INPUT_BYTES, ByteBudget, kubernetes_objects, object_label
from packing.fields import InputError
from packing.legacy import Conversion, convert_objects

__all__ = ["build_parser", "dump_yaml", "main", "read_and_convert"]


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="python -m packing convert",
                  description="Convert Karpenter v1alpha5/v1beta1 objects into v1 objects, with a report.")
    p.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON files with Kubernetes objects ('-' = stdin)")
    p.add_argument("--output", choices=("yaml", "json"), default="yaml")
    p.add_argument("--max-input-bytes", type=int, default=DEFAULT_MAX_INPUT_BYTES, metavar="N",
                   help=f"refuse input files larger than N bytes in all (default {DEFAULT_MAX_INPUT_BYTES}; 0: no limit)")
    return p


def read_and_convert(paths: Sequence[str], budget: ByteBudget | None = None) -> Conversion:
    """Every object of the files, legacy ones converted; InputError `file: document N (Kind name): field: …`."""
    budget = budget or ByteBudget(None)
    items: list[tuple[str, Mapping[str, Any]]] = []
    for path in paths:
        text = budget.read(path)
        for where, prefix, obj in kubernetes_objects(text, path):
            items.append((f"{where}{object_label(obj)}{': ' + prefix.rstrip('.') if prefix else ''}", obj))
    return convert_objects(items)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # userData and other multi-line strings as literal blocks, readable as written
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    return yaml.dump_all([dict(o) for o in objects], Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, explicit_start=True)


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        with contextlib.redirect_stderr(stderr):
            args = build_parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        done = read_and_convert(args.files, ByteBudget(args.max_input_bytes or None))
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    if args.output == "json":
        json.dump(done.to_json(), stdout, indent=2)
        stdout.write("\n")
        return 0
    stdout.write(dump_yaml(done.objects))
    for change in done.report:
        print(change.to_text(), file=stderr)
    if not done.converted:
        print("no legacy objects (v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate, v1beta1 NodePool or "
              "EC2NodeClass) in the input: printed as read", file=stderr)
    return 0
