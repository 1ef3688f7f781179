"""`manage.py whatif_bench`: time a NodePool preview on a synthetic 500-node / 5,000-pod cluster."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console.whatif import bench


class Command(BaseCommand):
    help = "Time a NodePool edit preview (provisioning + consolidation, before and after) on a synthetic cluster."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--nodes", type=int, default=500)
        parser.add_argument("--pods", type=int, default=5000)
        parser.add_argument("--pending", type=int, default=50)
        parser.add_argument("--repeat", type=int, default=3)

    def handle(self, *args: Any, **options: Any) -> None:
        figures = bench.run(options["nodes"], options["pods"], options["pending"], options["repeat"])
        self.stdout.write(json.dumps(figures))
