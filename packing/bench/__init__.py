"""Benchmarks: `python -m packing.bench plan [--quick] [--json]`."""
