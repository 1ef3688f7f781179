"""The simulated world's state. Everything lives in the database so the demo survives restarts and
every worker (web, Celery, the watcher) sees the same cluster and cloud.

Kubernetes objects are stored as their JSON bodies (the shape the backends hand the loops) with the
few fields we query by copied into columns. One global resourceVersion counter (SimState) orders
every write, as etcd's revision does; deletions leave tombstones so watches can replay them.
"""

from __future__ import annotations

from django.db import models


class SimState(models.Model):
    """The single row (pk=1) holding the world's counters and clock.

    Writers lock this row (select_for_update) before changing anything, which serialises the cluster's
    resourceVersions and makes two concurrent ticks run one after the other.
    """

    resource_version = models.BigIntegerField(default=0)
    # Watches resuming from a version older than this get ResourceExpired (tombstones were pruned).
    compacted_version = models.BigIntegerField(default=0)
    seed = models.BigIntegerField(default=0)
    # Bumped by every reset and mixed into generated ids, so a reset world never reuses an instance
    # id that a stale NodeClaim might still point at.
    epoch = models.PositiveIntegerField(default=0)
    # Simulated time starts here; the compressed day is measured from it.
    origin = models.DateTimeField()
    last_tick = models.DateTimeField(null=True, blank=True)
    # Counters that make names and ids deterministic for a given seed.
    instance_counter = models.BigIntegerField(default=0)
    object_counter = models.BigIntegerField(default=0)
    launch_attempts = models.BigIntegerField(default=0)
    workloads_seeded = models.BooleanField(default=False)
    # Capacity errors an operator injected at run time (manage.py simulation ice), on top of the
    # settings' LOADMASTER_SIM_ICE_OFFERINGS; same "type:zone:capacity-type" globs.
    ice_offerings = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"simulation (rv {self.resource_version}, seed {self.seed})"


class SimObject(models.Model):
    """A live Kubernetes object (Pod, Node, PodDisruptionBudget, DaemonSet, PodTemplate) as its JSON body."""

    kind = models.CharField(max_length=32)
    namespace = models.CharField(max_length=253, blank=True, default="")
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)
    resource_version = models.BigIntegerField(db_index=True)
    created_version = models.BigIntegerField()
    node_name = models.CharField(max_length=253, blank=True, default="", db_index=True)   # pods only
    provider_id = models.CharField(max_length=128, blank=True, default="", db_index=True)  # nodes only
    body = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "namespace", "name"], name="sim_object_key")]
        indexes = [models.Index(fields=["kind", "resource_version"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class SimTombstone(models.Model):
    """The last state of a deleted object, kept so a watch can report DELETED."""

    kind = models.CharField(max_length=32)
    namespace = models.CharField(max_length=253, blank=True, default="")
    name = models.CharField(max_length=253)
    resource_version = models.BigIntegerField(db_index=True)
    body = models.JSONField()

    class Meta:
        indexes = [models.Index(fields=["kind", "resource_version"])]


class SimInstance(models.Model):
    """An EC2 instance of the simulated cloud, with the times its lifecycle steps are due."""

    instance_id = models.CharField(max_length=32, unique=True)
    cluster = models.CharField(max_length=128, db_index=True)
    nodeclaim = models.CharField(max_length=253, blank=True, default="", db_index=True)
    nodepool = models.CharField(max_length=63, blank=True, default="")
    instance_type = models.CharField(max_length=64)
    zone = models.CharField(max_length=32)
    capacity_type = models.CharField(max_length=16)
    price = models.FloatField(null=True, blank=True)
    state = models.CharField(max_length=16, db_index=True)
    tags = models.JSONField(default=dict)
    launch_time = models.DateTimeField()
    running_at = models.DateTimeField()              # pending -> running
    register_at = models.DateTimeField()             # the kubelet creates its Node
    node_name = models.CharField(max_length=253)
    node_created = models.BooleanField(default=False)
    labels = models.JSONField(default=dict)          # the Node's labels at registration
    capacity = models.JSONField(default=dict)
    allocatable = models.JSONField(default=dict)
    # Drawn at launch from the seed, so the same seed interrupts the same instances at the same times
    # however often the tick runs.
    interrupt_at = models.DateTimeField(null=True, blank=True)
    fail_at = models.DateTimeField(null=True, blank=True)
    reclaim_at = models.DateTimeField(null=True, blank=True)     # end of the spot notice
    shutdown_at = models.DateTimeField(null=True, blank=True)    # shutting-down -> terminated
    terminated_at = models.DateTimeField(null=True, blank=True)
    termination_reason = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["launch_time", "instance_id"]

    def __str__(self) -> str:
        return f"{self.instance_id} {self.instance_type} {self.state}"


class SimEvent(models.Model):
    """A message on the simulated interruption queue (what EventBridge would put on SQS)."""

    kind = models.CharField(max_length=32)
    instance_id = models.CharField(max_length=32, db_index=True)
    time = models.DateTimeField()
    detail = models.JSONField(default=dict)
    # Like SQS's visibility timeout: a received message stays hidden for a while, then comes back
    # unless acked, so a worker that dies mid-handling does not lose it.
    visible_at = models.DateTimeField(db_index=True)
    receives = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["visible_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.instance_id} {self.time:%H:%M:%S}"


class SimWorkload(models.Model):
    """A demo Deployment: a pod template and the replica curve it follows over the compressed day."""

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    template = models.JSONField()                     # {"metadata": {...}, "spec": {...}} of its pods
    min_replicas = models.PositiveIntegerField(default=0)
    max_replicas = models.PositiveIntegerField(default=1)
    profile = models.CharField(max_length=32, default="business")
    # Set by an operator (manage.py simulation scale): overrides the curve until cleared.
    pinned_replicas = models.PositiveIntegerField(null=True, blank=True)
    replicas = models.PositiveIntegerField(default=0)  # what the last tick set
    pod_counter = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="sim_workload_key")]
        ordering = ["namespace", "name"]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
