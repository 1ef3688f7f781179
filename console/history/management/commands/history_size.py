"""`manage.py history_size`: how much a day of history takes, stored and exported, for a cluster of --nodes nodes
and --pods pods, with events generated at the rates given (docs/performance.md states the assumptions and the
figures). Run it against a scratch database: it records the events through the real service and leaves them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection

from console.history import selectors, services
from console.history.models import HistoryEvent
from packing.api import history

Event = history.Event
InterruptionKind = history.InterruptionKind
NodeInterrupted = history.NodeInterrupted
NodeLaunched = history.NodeLaunched
NodeTerminated = history.NodeTerminated
OfferingPrice = history.OfferingPrice
PodArrived = history.PodArrived
PodBound = history.PodBound
PodDeparted = history.PodDeparted
Prices = history.Prices
spec_id = history.spec_id
template_of = history.template_of

DAY = timedelta(days=1)
TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "c5.2xlarge", "r5.xlarge", "m6i.2xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _template(workload: int, rollout: int) -> dict[str, Any]:
    return template_of({"metadata": {"labels": {"app": f"app-{workload}", "pod-template-hash": f"h{rollout}"}},
                        "spec": {"containers": [{"name": "main", "resources": {
                            "requests": {"cpu": f"{100 * (1 + workload % 8)}m", "memory": f"{256 * (1 + workload % 6)}Mi"},
                            "limits": {"memory": f"{512 * (1 + workload % 6)}Mi"}}}],
                                 "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "apps",
                                                  "effect": "NoSchedule"}],
                                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                                "whenUnsatisfiable": "ScheduleAnyway",
                                                                "labelSelector": {"matchLabels": {"app": f"app-{workload}"}}}],
                                 "priority": 0}})


class Command(BaseCommand):
    help = "Record a generated day of history for a cluster and print its stored and exported size."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--nodes", type=int, default=200)
        parser.add_argument("--pods", type=int, default=2000)
        parser.add_argument("--workloads", type=int, default=60)
        parser.add_argument("--pod-replacements", type=float, default=4.0,
                            help="times each pod is replaced per day (rollouts, scaling, jobs)")
        parser.add_argument("--rollouts", type=int, default=2, help="new templates per workload per day")
        parser.add_argument("--node-replacements", type=float, default=0.5, help="share of nodes replaced per day")
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, *args: Any, **o: Any) -> None:
        rng = random.Random(o["seed"])
        start = datetime(2026, 12, 1, tzinfo=UTC)
        events: list[Event] = []
        templates: dict[str, Any] = {}
        nodes: list[str] = []
        for i in range(o["nodes"]):
            name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
            nodes.append(name)
            events.append(self._launch(start, name, rng))
        pods: dict[str, tuple[int, str]] = {}
        counter = 0

        def arrive(at: datetime, workload: int, rollout: int) -> None:
            nonlocal counter
            counter += 1
            t = _template(workload, rollout)
            sid = spec_id(t)
            templates[sid] = t
            name = f"app-{workload}-h{rollout}-{counter:06x}"
            pods[f"apps/{name}"] = (workload, sid)
            events.append(PodArrived(at, "apps", name, sid, uid=f"{counter:08x}-0000-4000-8000-{counter:012x}",
                                     owner_kind="ReplicaSet", owner_name=f"app-{workload}-h{rollout}"))
            events.append(PodBound(at + timedelta(seconds=rng.uniform(1, 90)), "apps", name, rng.choice(nodes)))

        for _ in range(o["pods"]):
            arrive(start, rng.randrange(o["workloads"]), 0)
        replacements = int(o["pods"] * o["pod_replacements"])
        rollouts = o["rollouts"]
        for k in range(replacements):
            at = start + timedelta(seconds=rng.uniform(0, DAY.total_seconds() - 120))
            key = rng.choice(list(pods)) if k % 50 == 0 or not pods else next(iter(pods))
            workload, _ = pods.pop(key)
            events.append(PodDeparted(at, "apps", key.split("/", 1)[1]))
            arrive(at, workload, 1 + (k * rollouts) // max(1, replacements))
        for _ in range(int(o["nodes"] * o["node_replacements"])):
            at = start + timedelta(seconds=rng.uniform(0, DAY.total_seconds() - 120))
            old = nodes.pop(rng.randrange(len(nodes)))
            if rng.random() < 0.1:
                events.append(NodeInterrupted(at, old, InterruptionKind.SPOT_INTERRUPTION))
            events.append(NodeTerminated(at + timedelta(seconds=60), old, "consolidation: underutilized"))
            counter += 1
            name = f"ip-10-1-{counter // 250 % 250}-{counter % 250}.ec2.internal"
            nodes.append(name)
            events.append(self._launch(at, name, rng))
        for h in range(24):  # hourly spot prices: every spot offering of the types in use changes
            events.append(Prices(start + timedelta(hours=h), tuple(
                OfferingPrice(t, z, "spot", round(rng.uniform(0.02, 0.2), 6)) for t in TYPES for z in ZONES)))
        events.sort(key=lambda e: e.at)
        before = HistoryEvent.objects.count()
        sizes_before = self._db_bytes()
        for i in range(0, len(events), 5000):
            batch = events[i:i + 5000]
            services.history_record(events=batch, templates={e.spec: templates[e.spec] for e in batch
                                                             if isinstance(e, PodArrived)})
        stored = self._db_bytes() - sizes_before
        exported = sum(len(line.encode()) for line in selectors.history_lines(since=start, until=start + DAY))
        self.stdout.write(f"events: {HistoryEvent.objects.count() - before}, templates: {len(templates)}")
        self.stdout.write(f"stored: {stored / 2**20:.1f} MiB/day ({connection.vendor}), "
                          f"exported: {exported / 2**20:.1f} MiB/day")

    def _launch(self, at: datetime, name: str, rng: random.Random) -> NodeLaunched:
        it, zone = rng.choice(TYPES), rng.choice(ZONES)
        spot = rng.random() < 0.6
        return NodeLaunched(at, name, it, zone, "spot" if spot else "on-demand", round(rng.uniform(0.03, 0.4), 6),
                            nodepool="general", provider_id=f"aws:///{zone}/i-{rng.getrandbits(60):015x}",
                            labels={"karpenter.sh/nodepool": "general", "node.kubernetes.io/instance-type": it,
                                    "topology.kubernetes.io/zone": zone,
                                    "karpenter.sh/capacity-type": "spot" if spot else "on-demand",
                                    "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
                            allocatable={"cpu": "3920m", "memory": "14Gi", "pods": "58"},
                            capacity={"cpu": "4", "memory": "16Gi", "pods": "58"})

    def _db_bytes(self) -> int:
        tables = ["history_historyevent", "history_historyspec"]
        with connection.cursor() as cur:
            if connection.vendor == "postgresql":
                cur.execute("VACUUM ANALYZE history_historyevent") if False else None
                return sum(self._pg(cur, t) for t in tables)
            cur.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'history_%'")
            return int(cur.fetchone()[0] or 0)

    @staticmethod
    def _pg(cur: Any, table: str) -> int:
        cur.execute("SELECT pg_total_relation_size(%s)", [table])
        return int(cur.fetchone()[0])
