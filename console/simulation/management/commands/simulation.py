"""manage.py simulation status|tick|reset|scale|interrupt|ice|unhealthy: inspect and drive the simulated world."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from console.backends.base import NodeNotFound
from console.repair_policy import condition_parse
from console.simulation import services
from console.simulation.cloud import SimulatedCloud
from console.simulation.models import SimWorkload


class Command(BaseCommand):
    help = "Inspect and drive the simulated cluster and cloud (the embedded default's backends)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        status = sub.add_parser("status", help="Simulated clock, instances, nodes, pods and workloads.")
        status.add_argument("--json", action="store_true", help="Print the full status as JSON.")
        tick = sub.add_parser("tick", help="Advance the world once (what Celery beat does every few seconds).")
        tick.add_argument("--times", type=int, default=1, help="Run this many ticks.")
        tick.add_argument("--step", type=float, default=0.0,
                          help="Seconds of real time to pretend between ticks (with --times; default: none).")
        reset = sub.add_parser("reset", help="Empty the simulated world and start the day again.")
        reset.add_argument("--seed", type=int, default=None, help="Seed for a reproducible run.")
        scale = sub.add_parser("scale", help="Pin a demo workload's replicas (or 'auto' to follow the day).")
        scale.add_argument("workload", help="namespace/name, e.g. shop/web")
        scale.add_argument("replicas", help="a number, or 'auto'")
        interrupt = sub.add_parser("interrupt", help="Send a spot interruption warning to an instance now.")
        interrupt.add_argument("instance_id")
        ice = sub.add_parser("ice", help="Inject capacity errors: offerings (type:zone:capacity-type globs) "
                                         "that launches find without capacity; no patterns clears them.")
        ice.add_argument("patterns", nargs="*", help='e.g. "m6i.*:us-east-1a:spot" or "*:*:spot"')
        unhealthy = sub.add_parser("unhealthy", help="Set a node's conditions as a failing kubelet or a diagnostic "
                                                     "agent would (default Ready=False), for node repair to act on.")
        unhealthy.add_argument("node", help="the Node's name")
        unhealthy.add_argument("--condition", action="append", default=None, metavar="TYPE=STATUS",
                               help="e.g. Ready=False (the default), Ready=Unknown, DiskPressure=True; "
                                    "Ready=True makes it healthy again; repeat for several")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "status":
            self._status(as_json=options["json"])
        elif action == "tick":
            now: datetime = timezone.now()
            for i in range(max(1, options["times"])):
                report = services.simulation_tick(now=now + timedelta(seconds=options["step"] * i))
                self.stdout.write(report.summary())
        elif action == "reset":
            state = services.simulation_reset(seed=options["seed"])
            self.stdout.write(f"Simulation reset (seed {state.seed}); the day starts again at the next tick.")
        elif action == "scale":
            namespace, _, name = options["workload"].partition("/")
            replicas = None if options["replicas"] == "auto" else _count(options["replicas"])
            try:
                services.workload_scale(namespace, name, replicas)
            except SimWorkload.DoesNotExist:
                raise CommandError(f"no simulated workload {options['workload']}") from None
            self.stdout.write(f"{options['workload']}: " + ("follows the day" if replicas is None else f"{replicas} replicas"))
        elif action == "interrupt":
            if not SimulatedCloud().interrupt(options["instance_id"]):
                raise CommandError(f"{options['instance_id']} is not a live spot instance without a pending notice")
            self.stdout.write("Interruption due; the next tick sends the warning.")
        elif action == "ice":
            patterns = services.ice_offerings_set(options["patterns"])
            self.stdout.write("No capacity for: " + (", ".join(patterns) if patterns else "(nothing injected)"))
        elif action == "unhealthy":
            self._unhealthy(options["node"], options["condition"] or ["Ready=False"])

    def _unhealthy(self, node: str, texts: list[str]) -> None:
        conditions = []
        for text in texts:
            try:
                ctype, status = condition_parse(text)
            except ValueError as e:
                raise CommandError(f"--condition {e}") from None
            conditions.append((ctype, status.value))
        try:
            body = services.node_conditions_set(node, conditions)
        except NodeNotFound:
            raise CommandError(f"no simulated node {node}") from None
        since = {c.get("type"): c.get("lastTransitionTime") for c in (body.get("status") or {}).get("conditions") or []}
        for ctype, status in conditions:
            self.stdout.write(f"{node}: {ctype}={status} since {since.get(ctype)}")

    def _status(self, *, as_json: bool) -> None:
        status = services.simulation_status()
        if as_json:
            self.stdout.write(json.dumps(status, indent=2, default=str))
            return
        w = self.stdout.write
        w(f"Simulated day {status['sim_day']}, {status['sim_time']} "
          f"(x{status['compression']:g}; seed {status['seed']}; last tick {status['last_tick'] or 'never'})")
        w("Instances: " + (", ".join(f"{n} {s}" for s, n in sorted(status["instances"].items())) or "none"))
        nodes, pods = status["nodes"], status["pods"]
        w(f"Nodes: {nodes['total']} ({nodes['initialized']} initialized, {nodes['unregistered']} unregistered)")
        w(f"Pods: {pods['total']} ({pods['bound']} bound, {pods['pending']} pending, "
          f"{pods['unschedulable']} unschedulable)")
        for wl in status["workloads"]:
            pinned = f", pinned {wl['pinned']}" if wl["pinned"] is not None else ""
            w(f"  {wl['workload']}: {wl['replicas']} replicas (curve now {wl['desired_now']}, {wl['profile']}{pinned})")
        w(f"Queued cloud events: {status['queued_events']}")
        if status["ice_offerings"]:
            w("Injected capacity errors: " + ", ".join(status["ice_offerings"]))


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise CommandError(f"replicas must be a number or 'auto', not {value!r}") from None
    if number < 0:
        raise CommandError("replicas must not be negative")
    return number
