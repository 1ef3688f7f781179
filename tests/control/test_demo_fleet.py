"""The demo fleet as `./dev.sh run` seeds it: its nodes match their NodePools (no spurious drift in the
first ledger lines a new operator reads), and `demo_setup` survives an operator's deletions."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.utils import timezone

from console.control.disruption import _engine_cluster
from console.control.lifecycle import lifecycle_run
from console.fleet import services
from console.fleet.demo import demo_load
from console.fleet.models import NodeClaim, NodePool
from console.simulation import services as sim_services
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from packing.disruption.drift import drift_reason
from tests.simulation.conftest import Clock


def _seeded_world(settings: Any) -> tuple[Clock, SimulatedCluster, SimulatedCloud]:
    settings.LOADMASTER_CLUSTER_NAME = "test"
    settings.LOADMASTER_CLOUD = settings.LOADMASTER_CLUSTER = "simulated"
    settings.LOADMASTER_SIM_DEMO_WORKLOADS = False
    settings.LOADMASTER_SIM_SPOT_INTERRUPTIONS_PER_HOUR = "0"
    clock = Clock(timezone.now())
    config = SimulationConfig.from_settings()
    sim_services.simulation_reset(now=clock(), config=config)
    assert demo_load()
    cluster, cloud = SimulatedCluster(clock=clock, sleep=lambda _: None), SimulatedCloud(config, clock=clock)
    for _ in range(8):                      # boot, register, initialize the seeded instances
        clock.advance(10)
        sim_services.simulation_tick(now=clock(), config=config)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    return clock, cluster, cloud


def test_seeded_nodes_match_their_nodepools(db: Any, settings: Any) -> None:
    clock, cluster, _ = _seeded_world(settings)
    live = NodeClaim.objects.active()
    assert live.count() == 5 and all(c.initialized_at for c in live)
    engine = _engine_cluster(cluster=cluster, now=clock())
    pools = {p.name: p for p in engine.nodepools}
    catalog = {t.name: t for t in engine.catalog}
    assert len(engine.nodes) == 5
    for node in engine.nodes:
        pool = pools[node.nodepool or ""]
        assert drift_reason(node.spec.labels, node.spec.taints, pool, catalog) is None, node.spec.name
    # The template's labels reached the nodes (what drift was missing before).
    seeded = cluster.get_node(live.get(name="default-7xk2p").node_name)
    assert seeded["metadata"]["labels"]["team"] == "platform"


def test_demo_setup_after_the_demo_pools_were_deleted(db: Any, settings: Any, tmp_path: Any) -> None:
    settings.VAR_DIR = tmp_path
    call_command("demo_setup")
    for pool in NodePool.objects.all():
        services.nodepool_delete(nodepool=pool, user=None)
    assert NodeClaim.objects.exists()               # their claims are still draining
    call_command("demo_setup")                      # used to fail with an IntegrityError
    assert not NodePool.objects.exists()            # the operator's deletions are not undone
    assert NodeClaim.objects.count() == 6
