"""SimulatedCloud: base.CloudProvider over SimInstance rows, shaped like the AWS backend.

- launch: adopt a live instance already tagged with the NodeClaim (a worker that died after launching
  leaves exactly that trace); else, as CreateFleet with one capacity type per call (the cheapest
  option's), take the cheapest option that has capacity. Injected capacity errors (a rate, or named
  offerings) refuse options; when every option of that capacity type is refused the launch fails with
  LaunchError(unavailable=[...]) so launch_with_fallback marks them and retries with the rest.
- tags: the AWS backend's (NodeClass tags, cluster, NodeClass, kubernetes.io/cluster/<name>=owned,
  NodePool, NodeClaim).
- poll_events/ack: a queue with a visibility timeout, like SQS; the tick puts spot interruption
  warnings and state changes on it.

Instances change state only in simulation_tick (pending -> running, registration, interruption,
termination), so the clock the tests inject decides everything.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from console.backends.base import (
    TAG_CLUSTER,
    TAG_NODECLAIM,
    TAG_NODECLASS,
    TAG_NODEPOOL,
    CapacityReservation,
    CloudEvent,
    Instance,
    LaunchError,
    LaunchOption,
    LaunchRequest,
)
from console.simulation.config import SimulationConfig
from console.simulation.models import SimEvent, SimInstance, SimState
from console.simulation.reservations import DEMO_RESERVATIONS, LABEL_RESERVATION_ID, SimReservation, resolve
from console.simulation.store import Store, digest, seeded_random, writing
from packing.api import InstanceType

log = logging.getLogger(__name__)

MAX_OPTIONS = 60                       # the AWS backend's override cap
LIVE_STATES = ("pending", "running")
NOT_TERMINATED_STATES = ("pending", "running", "shutting-down", "stopping", "stopped")
Clock = Callable[[], datetime]


@functools.lru_cache(maxsize=8)
def _catalog(region: str, kubelet_json: str) -> dict[str, InstanceType]:
    from packing.api import load_builtin

    return {t.name: t for t in load_builtin(region, kubelet=json.loads(kubelet_json) or None)}


def catalog(region: str, kubelet: Mapping[str, Any] | None = None) -> dict[str, InstanceType]:
    """Instance types by name (cached: the bundled catalog takes a third of a second to build)."""
    return _catalog(region, json.dumps(dict(kubelet or {}), sort_keys=True))


def to_instance(row: SimInstance, price: float | None = None) -> Instance:
    return Instance(instance_id=row.instance_id, instance_type=row.instance_type, zone=row.zone,
                    capacity_type=row.capacity_type, state=row.state, launch_time=row.launch_time,
                    tags=dict(row.tags), price=row.price if price is None else price,
                    reservation_id=str((row.labels or {}).get(LABEL_RESERVATION_ID, "")))


def node_name_for(counter: int) -> str:
    # EC2's private DNS names; the counter keeps them unique (10.0.16.10 onwards).
    n = 16 * 256 + 10 + counter
    return f"ip-10-{(n >> 16) & 255}-{(n >> 8) & 255}-{n & 255}.ec2.internal"


def _price_of(row: SimInstance, options: Sequence[LaunchOption]) -> float | None:
    for o in options:
        if (o.instance_type, o.zone, o.capacity_type) == (row.instance_type, row.zone, row.capacity_type):
            return o.price
    return row.price


def _field(nodeclass: Mapping[str, Any], snake: str, camel: str, default: Any = None) -> Any:
    value = nodeclass.get(snake)
    if value is None:
        value = nodeclass.get(camel)
    return default if value is None else value


class SimulatedCloud:
    """base.CloudProvider for the simulation. Construct freely: all state is in the database."""

    def __init__(self, config: SimulationConfig | None = None, *, clock: Clock | None = None,
                 reservations: Sequence[SimReservation] = DEMO_RESERVATIONS) -> None:
        self.config = config or SimulationConfig.from_settings()
        self.clock = clock or timezone.now
        self.reservations = tuple(reservations)

    # -- capacity reservations ----------------------------------------------------------------------------

    def _used(self) -> dict[str, int]:
        """reservation id -> live instances launched into it."""
        used: dict[str, int] = {}
        for labels in SimInstance.objects.filter(state__in=LIVE_STATES, capacity_type="reserved").values_list(
                "labels", flat=True):
            rid = (labels or {}).get(LABEL_RESERVATION_ID)
            if rid:
                used[rid] = used.get(rid, 0) + 1
        return used

    def capacity_reservations(self, terms: Sequence[Mapping[str, Any]]) -> list[CapacityReservation]:
        return resolve(terms, now=self.clock(), used=self._used(), reservations=self.reservations)

    def _reservation_full(self, option: LaunchOption) -> bool:
        """A reserved option whose reservation is unknown, not yet started, ending, or has no free instance."""
        found = [r for r in self.capacity_reservations([{"id": option.reservation_id}])
                 if option.reservation_id and r.instance_type == option.instance_type and r.zone == option.zone]
        now = self.clock()
        return not found or found[0].available <= 0 or found[0].state != "active" or (
            found[0].starts is not None and found[0].starts > now)

    # -- launch --------------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance:
        cluster = request.cluster or self.config.cluster_name
        with writing(self.clock(), seed=self.config.seed) as store:
            existing = (SimInstance.objects.filter(nodeclaim=request.nodeclaim, cluster=cluster, state__in=LIVE_STATES)
                        .order_by("launch_time", "id").first())
            if existing is not None:
                log.info("NodeClaim %s already has instance %s; adopting it", request.nodeclaim, existing.instance_id)
                return to_instance(existing, _price_of(existing, request.options))
            if not request.options:
                raise LaunchError(f"NodeClaim {request.nodeclaim}: no launch options")
            store.state.launch_attempts += 1
            attempt = store.state.launch_attempts
            kubelet = _field(request.nodeclass, "kubelet", "kubelet", {}) or {}
            types = catalog(self.config.region, kubelet)
            by_price = sorted(request.options, key=lambda o: o.price)
            # One capacity type per call, as CreateFleet: the cheapest option's.
            capacity = by_price[0].capacity_type
            seen: set[tuple[str, str, str]] = set()
            candidates: list[LaunchOption] = []
            for option in by_price:
                key = (option.instance_type, option.zone, option.reservation_id)
                if option.capacity_type != capacity or key in seen or option.instance_type not in types:
                    continue
                seen.add(key)
                candidates.append(option)
                if len(candidates) == MAX_OPTIONS:
                    break
            if not candidates:
                raise LaunchError(f"NodeClaim {request.nodeclaim}: no known instance type among the options")
            refused: list[LaunchOption] = []
            for option in candidates:
                if (capacity == "reserved" and self._reservation_full(option)) or self._no_capacity(
                        store.state, attempt, request.nodeclaim, option):
                    refused.append(option)
                    continue
                row = self._create(store, request, cluster, option, types[option.instance_type])
                if refused:
                    log.info("launch for %s: %d cheaper offerings had no capacity", request.nodeclaim, len(refused))
                return to_instance(row)
            raise LaunchError(
                f"CreateFleet for {request.nodeclaim} launched nothing: InsufficientInstanceCapacity "
                f"({len(refused)} {capacity} offerings)", unavailable=refused, retryable=False)

    def _no_capacity(self, state: SimState, attempt: int, nodeclaim: str, option: LaunchOption) -> bool:
        if self.config.ice_matches(option.instance_type, option.zone, option.capacity_type, state.ice_offerings):
            return True
        if self.config.ice_rate <= 0:
            return False
        rng = seeded_random(state.seed, "ice", attempt, nodeclaim, option.instance_type,
                            option.zone, option.capacity_type)
        return rng.random() < self.config.ice_rate

    def _create(self, store: Store, request: LaunchRequest, cluster: str, option: LaunchOption,
                itype: InstanceType) -> SimInstance:
        state, now, cfg = store.state, store.now, self.config
        state.instance_counter += 1
        counter = state.instance_counter
        instance_id = "i-0" + digest(state.seed, state.epoch, "instance", counter, length=16)
        node_name = node_name_for(counter)
        nodeclass_name = str(request.nodeclass.get("name") or "default")
        nodeclass_tags = {str(k): str(v) for k, v in (_field(request.nodeclass, "tags", "tags", {}) or {}).items()}
        tags = {**nodeclass_tags, TAG_CLUSTER: cluster, TAG_NODECLASS: nodeclass_name,
                f"kubernetes.io/cluster/{cluster}": "owned",
                TAG_NODEPOOL: request.nodepool, TAG_NODECLAIM: request.nodeclaim}
        labels = {
            **itype.labels,
            "kubernetes.io/hostname": node_name,
            "topology.kubernetes.io/zone": option.zone,
            "topology.kubernetes.io/region": cfg.region,
            "karpenter.sh/capacity-type": option.capacity_type,
            "node.kubernetes.io/instance-type": option.instance_type,
            "karpenter.sh/nodepool": request.nodepool,
            "karpenter.k8s.aws/ec2nodeclass": nodeclass_name,
        }
        if option.capacity_type == "reserved":
            labels.update({LABEL_RESERVATION_ID: option.reservation_id,
                           "karpenter.k8s.aws/capacity-reservation-type": option.reservation_type or "default",
                           "karpenter.k8s.aws/capacity-reservation-interruptible":
                               "true" if option.reservation_interruptible else "false"})
        running_at = now + timedelta(seconds=cfg.run_delay)
        # Interruption and failure times are drawn once, from the seed and the launch's ordinal (not the
        # id, which also depends on the reset epoch), so a reset with the same seed replays them.
        rng = seeded_random(state.seed, "fate", counter)
        real_per_sim_hour = 3600.0 / cfg.compression

        def draw(rate_per_sim_hour: float) -> datetime | None:
            if rate_per_sim_hour <= 0:
                return None
            return running_at + timedelta(seconds=rng.expovariate(rate_per_sim_hour) * real_per_sim_hour)

        interrupt_at = draw(cfg.spot_interruptions_per_hour)
        fail_at = draw(cfg.state_changes_per_hour)
        return SimInstance.objects.create(
            instance_id=instance_id, cluster=cluster, nodeclaim=request.nodeclaim, nodepool=request.nodepool,
            instance_type=option.instance_type, zone=option.zone, capacity_type=option.capacity_type,
            price=option.price, state="pending", tags=tags, launch_time=now, running_at=running_at,
            register_at=running_at + timedelta(seconds=cfg.register_delay), node_name=node_name,
            labels=labels, capacity=itype.capacity.to_strings(), allocatable=itype.allocatable.to_strings(),
            interrupt_at=interrupt_at if option.capacity_type == "spot" else None, fail_at=fail_at)

    # -- terminate / describe / list ----------------------------------------------------------------

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Begin terminating; unknown and already-terminating ids are skipped, as AWS does."""
        if not instance_ids:
            return
        with writing(self.clock(), seed=self.config.seed) as store:
            rows = SimInstance.objects.filter(instance_id__in=set(instance_ids),
                                              state__in=("pending", "running", "stopping", "stopped"))
            for row in rows:
                row.state = "shutting-down"
                row.shutdown_at = store.now + timedelta(seconds=self.config.terminate_delay)
                row.termination_reason = row.termination_reason or "TerminateInstances"
                row.save(update_fields=["state", "shutdown_at", "termination_reason"])

    def describe(self, instance_ids: Sequence[str]) -> list[Instance]:
        rows = SimInstance.objects.filter(instance_id__in=set(instance_ids)).order_by("instance_id")
        return [to_instance(r) for r in rows]

    def list_instances(self, cluster: str) -> list[Instance]:
        rows = SimInstance.objects.filter(cluster=cluster, state__in=NOT_TERMINATED_STATES).order_by("instance_id")
        return [to_instance(r) for r in rows]

    # -- interruption queue -----------------------------------------------------------------------

    def poll_events(self, max_events: int = 10) -> list[CloudEvent]:
        """Up to max_events visible messages; each stays hidden for the visibility timeout unless acked."""
        with writing(self.clock(), seed=self.config.seed) as store:
            rows = list(SimEvent.objects.filter(visible_at__lte=store.now).order_by("visible_at", "id")[:max(0, max_events)])
            hidden_until = store.now + timedelta(seconds=self.config.event_visibility_seconds)
            for row in rows:
                row.visible_at = hidden_until
                row.receives += 1
                row.save(update_fields=["visible_at", "receives"])
        return [_event(row) for row in rows]

    def ack(self, event: CloudEvent) -> None:
        event_id = event.receipt.removeprefix("sim-")
        if event_id.isdigit():
            SimEvent.objects.filter(pk=int(event_id)).delete()

    # -- for tests and operators (not part of CloudProvider) ----------------------------------------

    def interrupt(self, instance_id: str) -> bool:
        """Make a spot instance's interruption due now (the next tick sends the warning)."""
        now = self.clock()
        return bool(SimInstance.objects.filter(instance_id=instance_id, capacity_type="spot",
                                               reclaim_at__isnull=True, state__in=LIVE_STATES)
                    .update(interrupt_at=now))


def _event(row: SimEvent) -> CloudEvent:
    detail = dict(row.detail)
    if isinstance(detail.get("deadline"), str):
        # The AWS backend hands the deadline over as a datetime; so do we.
        detail["deadline"] = datetime.fromisoformat(detail["deadline"])
    return CloudEvent(kind=row.kind, instance_id=row.instance_id, time=row.time,
                      detail=detail, receipt=f"sim-{row.pk}")


def put_event(store: Store, kind: str, instance_id: str, region: str, **detail: Any) -> SimEvent:
    """Queue an event shaped like the AWS backend's parse of the EventBridge message."""
    detail_type = {"spot_interruption": "EC2 Spot Instance Interruption Warning",
                   "rebalance": "EC2 Instance Rebalance Recommendation",
                   "state_change": "EC2 Instance State-change Notification"}[kind]
    body = {"detail-type": detail_type, "id": digest(store.state.seed, kind, instance_id, store.now.isoformat()),
            "source": "aws.ec2", "region": region,
            **{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in detail.items()}}
    return SimEvent.objects.create(kind=kind, instance_id=instance_id, time=store.now, detail=body,
                                   visible_at=store.now)
