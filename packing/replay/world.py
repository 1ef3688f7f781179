"""One run of a replay: the history's pods arrive and leave in event time, and the real provisioning and disruption
engines decide the nodes, with the loops' timing (packing.replay.config.Timing).

What is simulated: pods arrive pending and are bound by a kube-scheduler step (least allocated ready node they
fit, for pods without pod affinity, spread or host ports) or else batched and planned by packing.scheduling's
Scheduler (existing and in-flight nodes first, then new NodeClaims, which are ready `launch_to_ready` later);
disruption runs packing.disruption.consolidate over the ready nodes, and its actions are taken as Karpenter does
(replacements first, the old nodes drained once they are ready, pods moved where the action planned them);
recorded interruptions hit the run's node of the same name, else a spot node of the same type and zone, else of
the same zone (chosen with the seeded generator); DaemonSets (from the history's DaemonSet-owned pods) run on
every node they land on. What is not: PodDisruptionBudgets and drift (a history records neither), image pulls,
kube-scheduler's scoring beyond least-allocated.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Any

import numpy as np

from packing.disruption import consolidate
from packing.disruption.model import LAST_POD_EVENT, Cluster, DisruptionSettings, NodeInfo
from packing.history.events import (
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    PodArrived,
    PodBound,
    PodDeparted,
    Prices,
    Revision,
)
from packing.history.jsonl import History, format_time
from packing.history.podspecs import engine_pod
from packing.instancetype import InstanceType
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
)
from packing.pods import Pod
from packing.poolschedule import pools_at
from packing.replay.config import Configuration, Timing
from packing.replay.metrics import RunMetrics, Sample
from packing.resources import Resources
from packing.scheduling.compact import compact_nodes, folded_spec, request_rows, room_only, rows_fit
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.tablecache import TableCache
from packing.taints import Taint, first_untolerated

__all__ = ["ReplayRun", "initial_state"]

DAEMONSET = "DaemonSet"
PROGRESS_EVERY = 2000  # events and timers between two progress reports


class Timer(IntEnum):
    """Internal events, ordered after history events of the same instant (a departure frees room first)."""

    NODE_READY = 1
    BATCH = 2
    DRAIN = 3
    TERMINATE = 4
    DISRUPT = 5
    RETRY = 6
    SAMPLE = 7


@dataclass
class SimNode:
    name: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float | None
    nodepool: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: Resources
    launched: datetime
    ready: bool = True
    draining: bool = False
    ended: datetime | None = None
    used: Resources = field(default_factory=Resources)  # change it with use() and release()
    pods: dict[str, Pod] = field(default_factory=dict)  # bound (DaemonSet pods included)
    initialized: datetime | None = None  # when it became ready
    last_pod_event: datetime | None = None  # a pod bound to it or gone from it (Karpenter's lastPodEventTime)
    nominated: dict[str, Pod] = field(default_factory=dict)  # waiting for it to be ready

    # the cpu and memory left, as integers: the kube-scheduler step compares them for every node and pod
    free_cpu: int = 0
    free_mem: int = 0

    def __post_init__(self) -> None:
        self._room()

    def use(self, requests: Resources) -> None:
        self.used = self.used + requests
        self._room()

    def release(self, requests: Resources) -> None:
        self.used = self.used - requests
        self._room()

    @property
    def quiet_since(self) -> datetime | None:
        """What consolidateAfter counts from: its last pod event, else its initialization."""
        return self.last_pod_event or self.initialized

    def _room(self) -> None:
        self.free_cpu = self.allocatable.get("cpu") - self.used.get("cpu")
        self.free_mem = self.allocatable.get("memory") - self.used.get("memory")

    def spec(self) -> ExistingNodeSpec:
        return ExistingNodeSpec(self.name, self.labels, self.allocatable, self.taints, initialized=self.ready,
                                kind="Node" if self.ready else "NodeClaim")


@dataclass
class PendingPod:
    pod: Pod
    since: datetime
    nominated: str = ""  # the in-flight node it waits for
    arrived: bool = True  # pending since it arrived (False: since a disruption or an interruption evicted it)


@dataclass
class InitialState:
    """The recorded cluster at the replay's start: what both runs begin from."""

    nodes: dict[str, NodeLaunched]
    pods: dict[str, tuple[PodArrived, str]]  # key -> (arrival, node or "")
    revisions: list[Revision]
    prices: list[Prices]
    next_index: int  # first history event after the start


def initial_state(history: History, start: datetime) -> InitialState:
    nodes: dict[str, NodeLaunched] = {}
    pods: dict[str, tuple[PodArrived, str]] = {}
    revisions: list[Revision] = []
    prices: list[Prices] = []
    i = 0
    # events at the start itself are the state in force then (an export begins with them)
    for i, e in enumerate(history.events):  # noqa: B007 - the index is the result
        if e.at > start:
            break
        if isinstance(e, NodeLaunched):
            nodes[e.name] = e
        elif isinstance(e, NodeTerminated):
            nodes.pop(e.name, None)
        elif isinstance(e, PodArrived):
            pods[e.key] = (e, e.node)
        elif isinstance(e, PodBound):
            if e.key in pods:
                pods[e.key] = (pods[e.key][0], e.node)
        elif isinstance(e, PodDeparted):
            pods.pop(e.key, None)
        elif isinstance(e, Revision):
            revisions.append(e)
        elif isinstance(e, Prices):
            prices.append(e)
    else:
        i = len(history.events)
    return InitialState(nodes, pods, revisions, prices, i)


class ReplayRun:
    """One configuration replayed over [start, end)."""

    def __init__(self, history: History, config: Configuration, timing: Timing, start: datetime, end: datetime,
                 *, seed: int, prefix: str, repack: bool = True,
                 progress: Callable[[float], None] | None = None) -> None:
        self.history = history
        # called now and then with the share of the window replayed (0..1); whatever it raises stops the run
        self.progress = progress
        self.config = config
        self.timing = timing
        self.start, self.end = start, end
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.repack = repack
        self.metrics = RunMetrics()
        self.nodes: dict[str, SimNode] = {}  # every node the run had, by name
        self.alive: dict[str, SimNode] = {}  # those not ended, in the same order
        self.pending: dict[str, PendingPod] = {}
        self.where: dict[str, str] = {}  # bound pod key -> node
        self.daemonsets: dict[str, DaemonSet] = {}
        self._timers: list[tuple[datetime, int, int, Any]] = []
        self._seq = itertools.count()
        self._names = itertools.count(1)
        self._batch_open: datetime | None = None
        self._batch_generation = 0
        self._changed = True
        self._retry_at: datetime | None = None
        self._waiting: dict[str, tuple[list[str], str, Mapping[str, str]]] = {}  # replacement -> action
        self._launches: dict[str, NodeLaunched] | None = None
        self._freed = Resources()  # what departures freed since disruption last ran
        # the first time after the last evaluation that a node's consolidateAfter passes (it was not a candidate then)
        self._wake_at: datetime | None = None
        # the solves' and consolidation's tables of one catalog and one set of pools, built once for all of them
        self.tables = TableCache()

    # ------------------------------------------------------------------ running
    def run(self) -> RunMetrics:
        state = initial_state(self.history, self.start)
        for r in state.revisions:
            self.config.revise(r.kind, r.name, r.manifest)
        for p in state.prices:
            self._prices(p)
        self.config.keep_types.update(n.instance_type for n in state.nodes.values())
        catalog = self.config.catalog()
        for launch in sorted(state.nodes.values(), key=lambda n: n.name):
            self._recorded_node(launch, catalog)
        for key in sorted(state.pods):
            arrival, node = state.pods[key]
            pod = self._pod(arrival)
            if arrival.owner_kind == DAEMONSET:
                self._daemonset(arrival, pod)
            if node and node in self.nodes:
                # bound before the window opened, at a time the start state does not keep: consolidateAfter
                # counts from the window's start (it can only wait longer than the recorded cluster did)
                self._bind(pod.on_node(node), node, self.start)
            elif arrival.owner_kind != DAEMONSET:
                self.pending[key] = PendingPod(pod, self.start)
        if self.pending:
            self._open_batch(self.start)
        self._push(self.start + self.timing.disruption_interval, Timer.DISRUPT, None)
        self._push(self.start, Timer.SAMPLE, None)
        events = self.history.events
        i = state.next_index
        steps = 0
        window = (self.end - self.start).total_seconds() or 1.0
        while True:
            steps += 1
            if self.progress is not None and steps % PROGRESS_EVERY == 0:
                now = min(events[i].at if i < len(events) else self.end,
                          self._timers[0][0] if self._timers else self.end)
                self.progress(min(1.0, max(0.0, (now - self.start).total_seconds() / window)))
            t_event = events[i].at if i < len(events) else None
            t_timer = self._timers[0][0] if self._timers else None
            if t_event is not None and t_event >= self.end:
                t_event = None
            if t_timer is not None and t_timer >= self.end:
                t_timer = None
            if t_event is None and t_timer is None:
                break
            if t_timer is None or (t_event is not None and t_event <= t_timer):
                self._event(events[i])
                i += 1
            else:
                at, _, _, (kind, data) = heapq.heappop(self._timers)
                self._timer(at, Timer(kind), data)
        self._finish()
        return self.metrics

    def _push(self, at: datetime, kind: Timer, data: Any) -> None:
        heapq.heappush(self._timers, (at, int(kind), next(self._seq), (int(kind), data)))

    # ------------------------------------------------------------------ history events
    def _event(self, e: Any) -> None:
        if isinstance(e, PodArrived):
            pod = self._pod(e)
            if e.owner_kind == DAEMONSET:
                self._daemonset(e, pod)
                return
            self.pending[e.key] = PendingPod(pod, e.at)
            if not self._kube_schedule(e.key, e.at):
                self._open_batch(e.at)
        elif isinstance(e, PodDeparted):
            self._depart(e.key, e.at)
        elif isinstance(e, NodeInterrupted):
            self._interrupted(e)
        elif isinstance(e, Revision):
            self.config.revise(e.kind, e.name, e.manifest)
            self._changed = True
        elif isinstance(e, Prices):
            self._prices(e)
            self._changed = True
        # PodBound, NodeLaunched, NodeTerminated are what the recorded cluster did; the run decides its own

    def _pod(self, e: PodArrived) -> Pod:
        return engine_pod(self.history.templates[e.spec], namespace=e.namespace, name=e.name, uid=e.uid,
                          owner_kind=e.owner_kind, owner_name=e.owner_name)

    def _daemonset(self, e: PodArrived, pod: Pod) -> None:
        key = f"{e.namespace}/{e.owner_name}"
        if key not in self.daemonsets:
            self.daemonsets[key] = DaemonSet(e.namespace, e.owner_name, pod)

    def _prices(self, e: Prices) -> None:
        self.config.set_prices(((o.key, o.price) for o in e.set), e.unset)

    def _depart(self, key: str, at: datetime) -> None:
        if key in self.pending:
            p = self.pending.pop(key)
            if p.nominated and p.nominated in self.nodes:
                self.nodes[p.nominated].nominated.pop(key, None)
            self.metrics.never_scheduled += 1
            return
        node = self.where.pop(key, None)
        if node is not None:
            n = self.nodes[node]
            pod = n.pods.pop(key, None)
            if pod is not None:
                n.release(pod.requests)
                n.last_pod_event = at
                self._freed = self._freed + pod.requests
                if all(p.owner_kind == DAEMONSET for p in n.pods.values()):
                    self._changed = True  # an empty node: emptiness can act on it

    def _interrupted(self, e: NodeInterrupted) -> None:
        self.metrics.interruptions += 1
        target = self.nodes.get(e.name)
        if target is None or target.ended is not None or target.draining:
            recorded = self._recorded_launch(e.name)
            candidates = [n for n in self.alive.values() if not n.draining
                          and n.capacity_type == "spot" and recorded is not None and n.zone == recorded.zone]
            same_type = [n for n in candidates if recorded is not None and n.instance_type == recorded.instance_type]
            pick_from = sorted(same_type or candidates, key=lambda n: n.name)
            target = self.rng.choice(pick_from) if pick_from else None
        if target is None:
            return
        self.metrics.interruptions_absorbed += 1
        self._drain(target, e.at, "interruption", end=e.at + self.timing.spot_notice)

    def _recorded_launch(self, name: str) -> NodeLaunched | None:
        if self._launches is None:
            self._launches = {e.name: e for e in self.history.events if isinstance(e, NodeLaunched)}
        return self._launches.get(name)

    # ------------------------------------------------------------------ timers
    def _timer(self, at: datetime, kind: Timer, data: Any) -> None:
        if kind is Timer.NODE_READY:
            self._ready(data, at)
        elif kind is Timer.BATCH:
            if data == self._batch_generation:
                self._batch_open = None
                self._provision(at)
        elif kind is Timer.TERMINATE:
            self._terminate(data, at)
        elif kind is Timer.DISRUPT:
            self._disrupt(at)
            self._push(at + self.timing.disruption_interval, Timer.DISRUPT, None)
        elif kind is Timer.RETRY:
            self._retry_at = None
            if self.pending:
                self._provision(at)
        elif kind is Timer.SAMPLE:
            live = list(self.alive.values())
            self.metrics.samples.append(Sample(at, sum(n.price or 0.0 for n in live), len(live), len(self.pending)))
            self._push(at + self.timing.sample_every, Timer.SAMPLE, None)

    def _open_batch(self, at: datetime) -> None:
        """Karpenter's batching: a batch closes `batch_idle` after its last pod, `batch_max` after its first."""
        if self._batch_open is None:
            self._batch_open = at
        self._batch_generation += 1
        close = min(at + self.timing.batch_idle, self._batch_open + self.timing.batch_max)
        self._push(close, Timer.BATCH, self._batch_generation)

    # ------------------------------------------------------------------ kube-scheduler
    def _kube_schedule(self, key: str, at: datetime) -> bool:
        """Bind a pending pod the way kube-scheduler's filters would, to the least allocated ready node it fits;
        pods with pod affinity, spread or host ports are left to the provisioner's solve (which knows them)."""
        p = self.pending[key]
        pod = p.pod
        if pod.spread or pod.affinity or pod.anti_affinity or pod.host_ports:
            return False
        best: SimNode | None = None
        best_score = 0.0
        cpu, mem = pod.requests.get("cpu"), pod.requests.get("memory")
        for n in self.alive.values():
            if not n.ready or n.draining:
                continue
            # the two resources that decide almost every refusal, as integers, before the full check
            if cpu > n.free_cpu or mem > n.free_mem or not self._fits(pod, n):
                continue
            score = _allocated(n, pod.requests)
            if best is None or score < best_score or (score == best_score and n.name < best.name):
                best, best_score = n, score
        if best is None:
            return False
        self.pending.pop(key)
        self._episode(p, at)
        self._bind(pod.on_node(best.name), best.name, at)
        return True

    @staticmethod
    def _fits(pod: Pod, n: SimNode) -> bool:
        if not (n.used + pod.requests).fits(n.allocatable):
            return False
        if first_untolerated(n.taints, pod.tolerations) is not None:
            return False
        terms = pod.node_requirement_terms()
        return not terms or any(all(r.has(n.labels.get(k)) for k, r in term.items()) for term in terms)

    def _bind(self, pod: Pod, node: str, at: datetime) -> None:
        n = self.nodes[node]
        n.pods[pod.key] = pod
        n.use(pod.requests)
        n.last_pod_event = at
        self.where[pod.key] = node

    def _episode(self, p: PendingPod, at: datetime) -> None:
        self.metrics.pending_seconds.append((at - p.since).total_seconds())
        if p.arrived:
            self._freed = self._freed - p.pod.requests  # an arrival takes back room departures freed

    # ------------------------------------------------------------------ provisioning
    def _provision(self, at: datetime) -> None:
        waiting = {k: p for k, p in self.pending.items() if not p.nominated}
        for key in sorted(waiting):
            if key in self.pending and self._kube_schedule(key, at):
                waiting.pop(key)
        if not waiting:
            return
        pools, _ = self.config.objects()
        pools, _ = pools_at(pools, at)
        catalog = self.config.catalog()
        live = [n for n in self.alive.values() if not n.draining]
        pods = [waiting[k].pod for k in sorted(waiting)]
        specs, running = self._cluster_view(live, pods, pools)
        sched = Scheduler(pools, catalog, specs, running, list(self.daemonsets.values()), tables=self.tables)
        res = sched.solve(pods, lower_bound=False)
        for placement in res.existing:
            n = self.nodes.get(placement.name)
            if n is None:
                continue
            for pod in placement.pods:
                p = self.pending.get(pod.key)
                if p is None:
                    continue
                if n.ready:
                    self.pending.pop(pod.key)
                    self._episode(p, at)
                    self._bind(pod.on_node(n.name), n.name, at)
                else:
                    p.nominated = n.name
                    n.nominated[pod.key] = pod
        for claim in res.nodeclaims:
            node = self._launch(claim.instance_type, claim.zone, claim.capacity_type, claim.price_per_hour,
                                claim.nodepool, claim.labels, (*claim.taints, *claim.startup_taints),
                                claim.allocatable, at, catalog)
            for pod in claim.pods:
                p = self.pending.get(pod.key)
                if p is not None:
                    p.nominated = node.name
                    node.nominated[pod.key] = pod
        if res.unschedulable_reasons and self._retry_at is None:
            self._retry_at = at + self.timing.retry_unschedulable
            self._push(self._retry_at, Timer.RETRY, None)

    @staticmethod
    def _cluster_view(live: list[SimNode], pods: list[Pod], pools: list[NodePool]
                      ) -> tuple[list[ExistingNodeSpec], list[Pod]]:
        """The nodes and running pods the provisioning solve is shown: all of them, or when only room decides
        where `pods` go, the compact picture (packing.scheduling.compact) that places them the same way: the
        ready nodes some pod fits on, with their pods' room folded in, and every in-flight node."""
        nominated = [pod.on_node(n.name) for n in live for pod in n.nominated.values()]
        if not room_only(pods, (p for n in live for p in n.pods.values())):
            return [n.spec() for n in live], [pod for n in live for pod in n.pods.values()] + nominated
        keys, reqs = request_rows(pods)
        ready = [n for n in live if n.ready]
        free = np.array([[n.allocatable.get(k, 0) - n.used.get(k, 0) for k in keys] for n in ready],
                        dtype=np.int64).reshape(len(ready), len(keys))
        limited = {p.name: "nodes" in p.limits for p in pools if p.limits}
        candidates: list[tuple[ExistingNodeSpec, bool]] = []
        running: list[Pod] = []
        for n, fits in zip(ready, rows_fit(free, reqs), strict=True):
            if not fits and not limited.get(n.nodepool):
                if n.nodepool in limited:  # only what it counts toward the limits matters (its capacity)
                    candidates.append((n.spec(), False))
                continue
            ds = [p for p in n.pods.values() if p.owner_kind == DAEMONSET]
            used = n.used
            for p in ds:
                used = used - p.requests
            candidates.append((folded_spec(n.spec(), used), fits))
            running.extend(ds)
        specs = compact_nodes(candidates, pools)
        specs.extend(n.spec() for n in live if not n.ready)
        running.extend(p for n in live if not n.ready for p in n.pods.values())
        return specs, running + nominated

    def _launch(self, instance_type: str, zone: str, capacity_type: str, price: float | None, nodepool: str,
                labels: Mapping[str, str], taints: tuple[Taint, ...], allocatable: Resources, at: datetime,
                catalog: list[InstanceType]) -> SimNode:
        name = f"{self.prefix}-{next(self._names):05d}"
        type_labels = next((dict(t.labels) for t in catalog if t.name == instance_type), {})
        merged = {**type_labels, **labels, NODEPOOL_LABEL: nodepool, INSTANCE_TYPE_LABEL: instance_type,
                  ZONE_LABEL: zone, CAPACITY_TYPE_LABEL: capacity_type, HOSTNAME_LABEL: name, INITIALIZED_LABEL: "true"}
        # startup taints are gone once the node is initialized; only the pool's taints stay
        node = SimNode(name, instance_type, zone, capacity_type, price, nodepool, merged,
                       tuple(t for t in taints if t.effect in ("NoSchedule", "NoExecute", "PreferNoSchedule")),
                       allocatable, at, ready=False)
        self.nodes[name] = node
        self.alive[name] = node
        self.metrics.nodes_launched += 1
        self._changed = True
        self._push(at + self.timing.launch_to_ready, Timer.NODE_READY, name)
        return node

    def _recorded_node(self, e: NodeLaunched, catalog: list[InstanceType]) -> None:
        it = next((t for t in catalog if t.name == e.instance_type), None)
        labels = {**(dict(it.labels) if it else {}), **e.labels, INSTANCE_TYPE_LABEL: e.instance_type,
                  ZONE_LABEL: e.zone, CAPACITY_TYPE_LABEL: e.capacity_type, HOSTNAME_LABEL: e.name,
                  INITIALIZED_LABEL: "true"}
        if e.nodepool:
            labels[NODEPOOL_LABEL] = e.nodepool
        alloc = Resources.parse(e.allocatable) if e.allocatable else (it.allocatable if it else Resources())
        taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "NoSchedule")))
                       for t in e.taints)
        price = e.price
        if price is None and it is not None:
            price = next((o.price for o in it.offerings if o.zone == e.zone and o.capacity_type == e.capacity_type), None)
        since = max(e.at, self.start)
        self.nodes[e.name] = self.alive[e.name] = SimNode(
            e.name, e.instance_type, e.zone, e.capacity_type, price, e.nodepool, labels, taints, alloc, since,
            initialized=since)

    def _ready(self, name: str, at: datetime) -> None:
        n = self.nodes.get(name)
        if n is None or n.ended is not None:
            return
        n.ready = True
        n.initialized = at
        for ds in self.daemonsets.values():
            if ds.runs_on(n.taints, n.labels):
                pod = ds.pod.on_node(name)
                pod = Pod(f"{ds.name}-{name}", ds.namespace, pod.labels, pod.requests, owner_kind=DAEMONSET,
                          owner_name=ds.name, node_name=name)
                n.pods[pod.key] = pod
                n.use(pod.requests)
        for key in sorted(n.nominated):
            pod = n.nominated.pop(key)
            p = self.pending.pop(key, None)
            if p is None:
                continue
            self._episode(p, at)
            self._bind(pod.on_node(name), name, at)
        for replacement, (old, reason, moves) in list(self._waiting.items()):
            if replacement != name:
                continue
            del self._waiting[replacement]
            if not any(r for r, (o, _, _) in self._waiting.items() if o == old):
                for old_name in old:
                    n_old = self.nodes.get(old_name)
                    if n_old is not None and n_old.ended is None and not n_old.draining:
                        self._drain(n_old, at, reason, moves=moves)
        self._changed = True

    # ------------------------------------------------------------------ disruption
    def _disrupt(self, at: datetime) -> None:
        """Evaluate disruption when something could have changed its answer since it last ran: a node launched,
        ended or emptied, the configuration or prices changed, or departures net of arrivals freed a quarter of
        the smallest node's cpu or memory since it last ran (a rolling restart frees nothing net). The loop runs
        every 10 s; a replay of days cannot afford that, so smaller changes wait for a larger one."""
        woke = self._wake_at is not None and at >= self._wake_at
        if not self._changed and not woke and not self._freed_enough():
            return
        self._freed = Resources()
        pools, settings = self.config.objects()
        catalog = self.config.catalog()
        ready = [n for n in self.alive.values() if not n.draining and n.ready]
        inflight = [n.spec() for n in self.alive.values() if not n.ready]
        running = [pod for n in ready for pod in n.pods.values()]
        cluster = Cluster(
            nodepools=pools, catalog=catalog,
            nodes=[NodeInfo(spec=n.spec(), created=n.launched, annotations=_pod_event(n)) for n in ready],
            running=running, pending=[p.pod for p in self.pending.values()],
            daemonsets=list(self.daemonsets.values()), settings=dict(settings), inflight=inflight)
        self.metrics.disruption_runs += 1
        report = consolidate(cluster, at, price_blocked=False, repack=self.repack, tables=self.tables)
        self._changed = False
        self._wake_at = _next_consolidatable(ready, settings, at)
        for action in report.actions:
            targets = [self.nodes[n] for n in action.nodes if n in self.nodes]
            if any(t.ended is not None or t.draining for t in targets) or not targets:
                continue
            self._changed = True
            self.metrics.nodes_disrupted[action.reason] += len(targets)
            renamed: dict[str, str] = {}
            for c in action.replacements:
                taints = tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in c.get("taints") or ())
                node = self._launch(c["instance_type"], c["zone"], c["capacity_type"], c.get("price_per_hour"),
                                    c["nodepool"], c.get("labels") or {}, taints,
                                    Resources.parse(c.get("allocatable") or {}), at, catalog)
                renamed[c["name"]] = node.name
            moves = {pod: renamed.get(dest, dest) for pod, dest in action.moves.items()}
            if renamed:
                for new in renamed.values():
                    self._waiting[new] = ([t.name for t in targets], action.reason, moves)
            else:
                for t in targets:
                    self._drain(t, at, action.reason, moves=moves)

    def _freed_enough(self) -> bool:
        live = [n.allocatable for n in self.alive.values() if n.ready]
        if not live:
            return False
        return any(self._freed.get(r, 0) * 4 >= min(a.get(r, 0) for a in live) > 0 for r in ("cpu", "memory"))

    def _drain(self, n: SimNode, at: datetime, reason: str, *, end: datetime | None = None,
               moves: Mapping[str, str] | None = None) -> None:
        """Cordon and evict: the pods go where the action planned them when they still fit there, else they are
        pending again; the node's billing stops when it terminates."""
        n.draining = True
        for key in sorted(n.pods):
            pod = n.pods[key]
            if pod.owner_kind == DAEMONSET:
                continue
            del n.pods[key]
            n.release(pod.requests)
            self.where.pop(key, None)
            self.metrics.evictions[reason] += 1
            self.pending[key] = PendingPod(pod.on_node(""), at, arrived=False)
            dest = (moves or {}).get(key)
            target = self.nodes.get(dest) if dest else None
            if target is not None and target.ready and not target.draining and target.ended is None \
                    and self._fits(pod, target):
                p = self.pending.pop(key)
                self._episode(p, at)
                self._bind(pod.on_node(target.name), target.name, at)
            elif target is not None and not target.ready and target.ended is None:
                self.pending[key].nominated = target.name
                target.nominated[key] = pod.on_node("")
            elif not self._kube_schedule(key, at):
                self._open_batch(at)
        self._push(end or at + self.timing.drain, Timer.TERMINATE, n.name)
        self._changed = True

    def _terminate(self, name: str, at: datetime) -> None:
        n = self.nodes.get(name)
        if n is None or n.ended is not None:
            return
        n.ended = at
        del self.alive[name]
        for key in sorted(n.pods):
            self.where.pop(key, None)
        for key in sorted(n.nominated):
            p = self.pending.get(key)
            if p is not None:
                p.nominated = ""
        if any(not p.nominated for p in self.pending.values()):
            self._open_batch(at)
        self._changed = True

    # ------------------------------------------------------------------ the end
    def _finish(self) -> None:
        for n in sorted(self.nodes.values(), key=lambda n: n.name):
            self.metrics.add_node_time(max(n.launched, self.start), min(n.ended or self.end, self.end), n.price,
                                       n.capacity_type)
        self.metrics.never_scheduled += len(self.pending)


def _pod_event(n: SimNode) -> dict[str, str]:
    """The node's last pod event as the engine reads it (Karpenter's NodeClaim lastPodEventTime; its initialization
    when no pod came or went since)."""
    last = n.quiet_since
    return {LAST_POD_EVENT: format_time(last)} if last is not None else {}


def _next_consolidatable(ready: list[SimNode], settings: Mapping[str, DisruptionSettings], at: datetime
                         ) -> datetime | None:
    """When the first node still within its pool's consolidateAfter passes it: Karpenter's Consolidatable condition
    turns true then, which counts as a change of the cluster for the disruption loop."""
    wake: datetime | None = None
    for n in ready:
        st = settings.get(n.nodepool)
        after = st.consolidate_after if st is not None else None
        last = n.quiet_since
        if after and last is not None and last + after > at and (wake is None or last + after < wake):
            wake = last + after
    return wake


def _allocated(n: SimNode, requests: Resources) -> float:
    after = n.used + requests
    shares = [after.get(r, 0) / n.allocatable[r] for r in ("cpu", "memory") if n.allocatable.get(r, 0)]
    return max(shares, default=0.0)
