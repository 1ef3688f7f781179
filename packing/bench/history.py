"""A synthetic history for the replay benchmark: a cluster of `nodes` recorded nodes and about `pods` pods over
`days` days, with a daily rhythm (replicas swing ±25 % around the mean over the day), rolling restarts (a pod
lives 6 h on average, then is replaced under a new name) and a few spot interruptions a day. Deterministic for a
seed. The recorded nodes are m5/c5/r5 in three zones, a third of them spot; a pod is recorded bound at once to
the first recorded node with room, and a new recorded node is launched when none has room."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from packing.history.events import (
    Event,
    InterruptionKind,
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    PodArrived,
    PodBound,
    PodDeparted,
    Revision,
)
from packing.history.jsonl import Header, History
from packing.history.podspecs import spec_id

__all__ = ["synthetic_history"]

START = datetime(2026, 11, 23, tzinfo=UTC)  # a Monday
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
# (type, cpu millicores, memory MiB, on-demand $/h as in the bundled us-east-1 snapshot's m5/c5/r5 .xlarge rows)
NODE_TYPES = (("m5.xlarge", 3920, 14000, 0.192), ("c5.xlarge", 3920, 6500, 0.17), ("r5.xlarge", 3920, 29000, 0.252))
SHAPES = ((100, 256), (250, 512), (250, 1024), (500, 1024), (500, 2048), (200, 512))

POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
    "spec": {
        "template": {"spec": {
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
            ],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "expireAfter": "720h",
        }},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
    },
}
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
    "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
             "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
             "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}]},
}


@dataclass
class _Node:
    name: str
    cpu: int
    mem: int
    used_cpu: int = 0
    used_mem: int = 0
    pods: set[str] = field(default_factory=set)
    launched: datetime = START
    last_departure: datetime = START


def _template(cpu: int, mem: int, app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}}}]}}


def synthetic_history(*, days: float, nodes: int, pods: int, seed: int = 1) -> History:
    rng = random.Random(seed)
    end = START + timedelta(days=days)
    header = Header(source="python -m packing.bench replay (synthetic)", start=START, end=end)
    history = History(header)
    events: list[Event] = [
        Revision(START, _kind("EC2NodeClass"), "default", NODECLASS, 1),
        Revision(START, _kind("NodePool"), "default", POOL, 1),
    ]
    workloads = []
    per = max(1, pods // 100)
    for index in range(100):
        cpu, mem = SHAPES[index % len(SHAPES)]
        template = _template(cpu, mem, f"app-{index}")
        sid = spec_id(template)
        history.templates[sid] = template
        workloads.append((f"app-{index}", sid, cpu, mem, per))
    live_nodes: dict[str, _Node] = {}
    spot_nodes: set[str] = set()
    counter = iter(range(1, 10**9))

    def launch(at: datetime) -> _Node:
        kind, cpu, mem, price = NODE_TYPES[rng.randrange(len(NODE_TYPES))]
        name = f"ip-{next(counter):06d}"
        spot = rng.random() < 1 / 3
        events.append(NodeLaunched(at, name, kind, ZONES[rng.randrange(3)], "spot" if spot else "on-demand",
                                   round(price * (0.38 if spot else 1.0), 6), "default"))
        node = _Node(name, cpu, mem, launched=at)
        live_nodes[name] = node
        if spot:
            spot_nodes.add(name)
        return node

    for _ in range(nodes):
        launch(START)
    where: dict[str, tuple[str, int, int]] = {}
    bound: dict[str, datetime] = {}
    alive: dict[str, list[str]] = {w[0]: [] for w in workloads}

    def arrive(at: datetime, w: tuple[str, str, int, int, int], initial: bool) -> None:
        app, sid, cpu, mem, _ = w
        name = f"{app}-{next(counter):07d}"
        # events are drawn at random times within a step, so a node is only taken if it was launched by then
        node = next((n for n in live_nodes.values()
                     if n.launched <= at and n.used_cpu + cpu <= n.cpu and n.used_mem + mem <= n.mem), None) or launch(at)
        node.used_cpu += cpu
        node.used_mem += mem
        node.pods.add(name)
        where[name] = (node.name, cpu, mem)
        bound[name] = at if initial else at + timedelta(seconds=2)
        alive[app].append(name)
        if initial:
            events.append(PodArrived(at, "shop", name, sid, owner_kind="ReplicaSet", owner_name=f"{app}-rs",
                                     node=node.name))
        else:
            events.append(PodArrived(at, "shop", name, sid, owner_kind="ReplicaSet", owner_name=f"{app}-rs"))
            events.append(PodBound(at + timedelta(seconds=2), "shop", name, node.name))

    def depart(at: datetime, app: str, name: str) -> None:
        node_name, cpu, mem = where.pop(name)
        del bound[name]
        alive[app].remove(name)
        n = live_nodes.get(node_name)
        if n is not None:
            n.used_cpu -= cpu
            n.used_mem -= mem
            n.pods.discard(name)
            n.last_departure = max(n.last_departure, at)
            if not n.pods and len(live_nodes) > nodes // 2:
                del live_nodes[node_name]
                events.append(NodeTerminated(n.last_departure + timedelta(seconds=30), node_name,
                                             "consolidation: empty"))
        events.append(PodDeparted(at, "shop", name))

    for w in workloads:
        for _ in range(w[4]):
            arrive(START, w, True)
    # every 5 minutes each workload moves towards its replicas of the hour; pods also restart at random
    step = timedelta(minutes=5)
    t = START + step
    while t < end:
        hour = (t - START).total_seconds() / 3600
        swing = 1 + 0.25 * math.sin(2 * math.pi * (hour - 6) / 24)
        for w in workloads:
            app = w[0]
            want = max(1, round(w[4] * swing))
            while len(alive[app]) < want:
                arrive(t + timedelta(seconds=rng.randrange(300)), w, False)
            while len(alive[app]) > want:
                oldest = alive[app][0]
                depart(max(t + timedelta(seconds=rng.randrange(300)), bound[oldest] + timedelta(seconds=1)), app,
                       oldest)
            for name in list(alive[app]):
                if rng.random() < step.total_seconds() / (6 * 3600):
                    # a pod bound later in this step restarts after it was bound
                    at = max(t + timedelta(seconds=rng.randrange(300)), bound[name] + timedelta(seconds=1))
                    depart(at, app, name)
                    arrive(at + timedelta(seconds=1), w, False)
        if rng.random() < 4 * step.total_seconds() / 86400:  # about four interruptions a day
            spot = sorted(spot_nodes & set(live_nodes))
            if spot:
                victim = rng.choice(spot)
                events.append(NodeInterrupted(t, victim, InterruptionKind.SPOT_INTERRUPTION))
        t += step
    history.events = sorted(events, key=_order)
    return history


def _kind(name: str) -> Any:
    from packing.history.events import ManifestKind

    return ManifestKind(name)


def _order(e: Event) -> tuple[datetime, int]:
    from packing.history.events import EVENT_ORDER

    return e.at, EVENT_ORDER[type(e)]


def iter_lines(history: History) -> Iterator[str]:
    """The history as JSON lines (for the benchmark's file)."""
    import io

    from packing.history.jsonl import HistoryWriter

    buf = io.StringIO()
    writer = HistoryWriter(buf, history.header)
    for sid, template in history.templates.items():
        writer.add_template(sid, template)
    writer.write_all(history.events)
    yield buf.getvalue()
