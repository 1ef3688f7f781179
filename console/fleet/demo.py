"""The demo fleet loaded by the README's run command: a NodeClass, three NodePools, NodeClaims at
different lifecycle stages and ledger entries, so every page has something true to show.

Capacity, allocatable and prices come from the instance catalog (on-demand list prices; spot
prices are estimates offline and the claim's price_source says so); a claim whose price the catalog
does not know is saved with an unknown price rather than a made-up one.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.fleet import services
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool

logger = logging.getLogger(__name__)

NODECLASS = {
    "name": "default",
    "ami_family": "AL2023",
    "ami_selector_terms": [{"alias": "al2023@latest"}],
    "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    # the simulated account's two reservations (console/simulation/reservations.py): the NodeClass's status lists them
    "capacity_reservation_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    "role": "KarpenterNodeRole-demo",
    "tags": {"team": "platform"},
    "block_device_mappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi", "volumeType": "gp3",
                                                                   "encrypted": True}}],
    "kubelet": {"maxPods": 110},
    "metadata_options": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
}

NODEPOOLS: list[dict[str, Any]] = [
    {
        "name": "default",
        "node_class_name": "default",
        "weight": 50,
        "template_labels": {"team": "platform"},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
        ],
        "limits": {"cpu": "200", "memory": "800Gi"},
        "consolidation_policy": "WhenEmptyOrUnderutilized",
        "consolidate_after": "1m",
        "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h",
                                        "reasons": ["Underutilized"]}],
    },
    {
        "name": "gpu",
        "node_class_name": "default",
        "weight": 10,
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5", "g6"]},
        ],
        "limits": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
        "consolidation_policy": "WhenEmpty",
        "consolidate_after": "10m",
        "budgets": [{"nodes": "1"}],
    },
    {
        "name": "batch",
        "node_class_name": "default",
        "weight": 20,
        "template_labels": {"workload": "batch"},
        "taints": [{"key": "workload", "value": "batch", "effect": "NoSchedule"}],
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c7g", "m7g", "c8g", "m8g"],
             "minValues": 2},
        ],
        "limits": {"cpu": "400"},
        "expire_after": "24h",
        "consolidation_policy": "WhenEmptyOrUnderutilized",
        "consolidate_after": "30s",
        "budgets": [{"nodes": "20%"}],
    },
]

# (name, pool, instance type, capacity type, zone, age in minutes, state)
CLAIMS = [
    ("default-7xk2p", "default", "m6i.xlarge", "on-demand", "us-east-1a", 600, "initialized"),
    ("default-q9d4m", "default", "c6g.2xlarge", "spot", "us-east-1b", 240, "initialized"),
    ("default-h2v8c", "default", "m7g.large", "spot", "us-east-1c", 3, "registered"),
    ("gpu-b4n7t", "gpu", "g5.xlarge", "on-demand", "us-east-1a", 90, "initialized"),
    ("batch-z8w1r", "batch", "c7g.xlarge", "spot", "us-east-1d", 1, "launched"),
    ("batch-k3j6f", "batch", "c7g.xlarge", "spot", "us-east-1a", 300, "terminated"),
]


@dataclass
class _Offer:
    capacity: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    price: Decimal | None = None
    price_source: str = ""


def _catalog() -> dict[str, Any]:
    try:
        from packing.api import load_builtin

        return {t.name: t for t in load_builtin("us-east-1", kubelet=NODECLASS["kubelet"])}
    except Exception:  # the demo must load even if the catalog is unavailable
        logger.exception("instance catalog unavailable; demo NodeClaims get no capacity or price")
        return {}


def _offer(catalog: dict[str, Any], instance_type: str, capacity_type: str, zone: str) -> _Offer:
    itype = catalog.get(instance_type)
    if itype is None:
        return _Offer()
    offer = _Offer(capacity=itype.capacity.to_strings(), allocatable=itype.allocatable.to_strings())
    for offering in itype.offerings:
        if offering.zone == zone and offering.capacity_type == capacity_type and offering.price is not None:
            offer.price = Decimal(str(round(offering.price, 6)))
            offer.price_source = offering.price_source
    return offer


def _simulated_instance(claim: NodeClaim, pool: str) -> Any:
    from console.backends.base import LaunchOption, LaunchRequest
    from console.simulation.cloud import SimulatedCloud

    return SimulatedCloud().launch(LaunchRequest(
        nodeclaim=claim.name, nodepool=pool, cluster=settings.LOADMASTER_CLUSTER_NAME, nodeclass=NODECLASS,
        options=[LaunchOption(claim.instance_type, claim.zone, claim.capacity_type,  # type: ignore[arg-type]
                              float(claim.price_per_hour or 0))],
        labels=claim.labels, taints=list(claim.taints or [])))


def fleet_is_empty() -> bool:
    """No NodePool, EC2NodeClass or NodeClaim: the demo may be loaded. Anything left — even claims of
    deleted pools still draining — means an operator has used the fleet, and a restart of the demo must
    neither undo their deletions nor collide with the names still in use."""
    return not (NodePool.objects.exists() or EC2NodeClass.objects.exists() or NodeClaim.objects.exists())


def claim_labels(pool: Mapping[str, Any], instance_type: str, capacity_type: str, zone: str) -> dict[str, str]:
    """The labels a NodeClaim of this pool gets at launch: the pool template's labels and the
    well-known ones. The seeded nodes carry them, so drift does not find them changed."""
    return {**{str(k): str(v) for k, v in (pool.get("template_labels") or {}).items()},
            "karpenter.sh/nodepool": str(pool["name"]), "node.kubernetes.io/instance-type": instance_type,
            "karpenter.sh/capacity-type": capacity_type, "topology.kubernetes.io/zone": zone}


@transaction.atomic
def demo_load(*, user: Any = None) -> bool:
    """Load the demo fleet into an empty fleet (see fleet_is_empty). Returns whether it was loaded."""
    if not fleet_is_empty():
        return False
    services.nodeclass_create(values=NODECLASS, user=user, source="demo")
    pools = {spec["name"]: services.nodepool_create(values=spec, user=user, source="demo") for spec in NODEPOOLS}
    now = timezone.now()
    catalog = _catalog()
    # The demo's claims carry their pool's taints like launched ones, or the simulated kube-scheduler
    # would put any pod on the GPU and batch nodes.
    pool_specs = {spec["name"]: spec for spec in NODEPOOLS}
    for name, pool, itype, capacity, zone, age, state in CLAIMS:
        created = now - timedelta(minutes=age)
        offer = _offer(catalog, itype, capacity, zone)
        price = offer.price
        claim = NodeClaim(
            name=name, nodepool=pools[pool], nodepool_name=pool, instance_type=itype,
            instance_type_options=[itype], capacity_type=capacity, zone=zone, price_per_hour=price,
            price_source=offer.price_source, capacity=offer.capacity, allocatable=offer.allocatable,
            created_at=created, taints=list(pool_specs[pool].get("taints") or []),
            labels=claim_labels(pool_specs[pool], itype, capacity, zone),
        )
        simulated = settings.LOADMASTER_CLOUD == "simulated" and state != "terminated"
        if simulated:
            # Back the claim by a real instance of the simulated cloud; its node registers and the
            # lifecycle loop takes it from "launched", as for any claim the loops launch.
            state = "launched"
            instance = _simulated_instance(claim, pool)
            claim.instance_id, claim.provider_id = instance.instance_id, instance.provider_id
            claim.launch_started_at = claim.launched_at = now
        elif state in ("launched", "registered", "initialized", "terminated"):
            claim.launched_at = created + timedelta(seconds=20)
            claim.instance_id = f"i-0{zlib.crc32(name.encode()) * 7919:015x}"[:19]
            claim.provider_id = f"aws:///{zone}/{claim.instance_id}"
        if state in ("registered", "initialized", "terminated"):
            claim.registered_at = created + timedelta(seconds=50)
            claim.node_name = f"ip-10-0-{zlib.crc32(name.encode()) % 250}-{zlib.crc32(name[::-1].encode()) % 250}.ec2.internal"
        if state in ("initialized", "terminated"):
            claim.initialized_at = created + timedelta(seconds=75)
        if state == "terminated":
            claim.disrupting_at = now - timedelta(minutes=12)
            claim.terminated_at = now - timedelta(minutes=10)
            claim.termination_reason = "empty: all pods finished (consolidation)"
        claim.save()
        Decision.objects.create(
            at=created, kind=Decision.LAUNCH, nodepool=pools[pool], nodepool_name=pool, nodes=[name],
            cost_before=None, cost_after=price,
            why=f"launched {itype} ({capacity}, {zone}) for pending pods in nodepool {pool}: "
                f"cheapest offering that fits them"
                + (" (price unknown in the catalog)" if price is None else
                   " (spot price is an estimate)" if offer.price_source == "estimate" else ""),
        )
    Decision.objects.create(
        at=now - timedelta(minutes=10), kind=Decision.DISRUPTION, nodepool=pools["batch"], nodepool_name="batch",
        nodes=["batch-k3j6f"], cost_before=_offer(catalog, "c7g.xlarge", "spot", "us-east-1a").price,
        cost_after=Decimal(0),
        why="empty: node batch-k3j6f ran no pods except DaemonSets for 30s (consolidateAfter), deleted",
    )
    Decision.objects.create(
        at=now - timedelta(minutes=2), kind=Decision.UNSCHEDULABLE, nodepool_name="",
        pods=["ml/trainer-0"],
        why="pod ml/trainer-0 cannot be scheduled: nodepool gpu: limit nvidia.com/gpu=8 would be exceeded; "
            "nodepool default: no instance type has nvidia.com/gpu; nodepool batch: taint workload=batch:NoSchedule not tolerated",
        details={"reasons": [
            {"nodepool": "gpu", "reason": "limit nvidia.com/gpu=8 would be exceeded"},
            {"nodepool": "default", "reason": "no instance type has nvidia.com/gpu"},
            {"nodepool": "batch", "reason": "taint workload=batch:NoSchedule not tolerated"},
        ]},
    )
    return True
