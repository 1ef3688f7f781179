"""State the control loops share between workers: locks with an expiry and the offerings AWS
recently refused. Both live in the database so any number of workers on any number of machines
agree on them."""

from __future__ import annotations

from django.db import models


class LoopLock(models.Model):
    """One row per loop. A worker holds the lock while ``owner`` is its token and ``expires_at`` is
    in the future; a crashed worker's lock simply expires."""

    name = models.CharField(max_length=64, primary_key=True)
    owner = models.CharField(max_length=128, blank=True, default="")
    expires_at = models.DateTimeField()
    acquired_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} held by {self.owner or 'nobody'} until {self.expires_at:%H:%M:%S}"


class UnavailableOffering(models.Model):
    """An instance type × zone × capacity type that failed to launch for lack of capacity: not tried
    again until ``expires_at`` (3 minutes by default, as Karpenter does)."""

    instance_type = models.CharField(max_length=64)
    zone = models.CharField(max_length=32)
    capacity_type = models.CharField(max_length=16)
    reason = models.CharField(max_length=128, blank=True, default="")
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["instance_type", "zone", "capacity_type"],
                                               name="unique_unavailable_offering")]

    def __str__(self) -> str:
        return f"{self.instance_type} {self.zone} {self.capacity_type} until {self.expires_at:%H:%M:%S}"


class MetricSample(models.Model):
    """One minute of one NodePool (nodepool "" is the whole cluster): what the dashboards and alerts
    read. Costs are per hour; cpu in millicores, memory in bytes."""

    at = models.DateTimeField(db_index=True)
    nodepool = models.CharField(max_length=63, blank=True, default="")
    nodes = models.PositiveIntegerField(default=0)
    spot_nodes = models.PositiveIntegerField(default=0)
    cost_per_hour = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    # What the same nodes would cost on-demand: the base of the spot-savings figures.
    on_demand_cost_per_hour = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    # True when any price in the sample is an estimate (offline spot prices) or unknown.
    estimated = models.BooleanField(default=False)
    unpriced_nodes = models.PositiveIntegerField(default=0)
    cpu_allocatable = models.BigIntegerField(default=0)
    cpu_requested = models.BigIntegerField(default=0)
    memory_allocatable = models.BigIntegerField(default=0)
    memory_requested = models.BigIntegerField(default=0)
    pods = models.PositiveIntegerField(default=0)
    pods_pending = models.PositiveIntegerField(default=0)
    # {"nodepool default: limit cpu=100 would be exceeded": 3, ...} for the pods pending now.
    unschedulable_reasons = models.JSONField(default=dict, blank=True)
    # The provisioning engine's lower bound ($/h) on any plan for the pods running now (see
    # console.control.metrics). Null when it could not be computed: never read as $0.
    lower_bound_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["at", "nodepool"], name="one_sample_per_minute_and_pool")]
        indexes = [models.Index(fields=["nodepool", "at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.nodepool or 'cluster'} ${self.cost_per_hour}/h"


class DisruptionAction(models.Model):
    """One action of the disruption engine, executed step by step across beat ticks:
    cordon → (launch replacements → wait until they are initialized) → re-validate after 15 s →
    drain through evictions (a PDB refusal waits) → delete the nodes → terminate the instances."""

    CORDONING = "cordoning"
    REPLACING = "replacing"
    VALIDATING = "validating"
    DRAINING = "draining"
    DONE = "done"
    FAILED = "failed"
    STATES = [(s, s) for s in (CORDONING, REPLACING, VALIDATING, DRAINING, DONE, FAILED)]

    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=STATES, db_index=True)
    type = models.CharField(max_length=8)          # delete | replace
    reason = models.CharField(max_length=16)       # empty | drifted | expired | underutilized
    nodes = models.JSONField(default=list)
    replacements = models.JSONField(default=list)  # nodeclaim objects as the plan CLI prints them
    replacement_claims = models.JSONField(default=list)
    savings_per_hour = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    why = models.TextField()
    validate_after = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.type} {','.join(self.nodes)} ({self.state})"


class NodePoolProblem(models.Model):
    """A NodePool a control loop could not use on its last run (its rows could not be turned into
    engine objects, or the engine reported it unusable), with why. The loop keeps serving every other
    pool; the row goes when the pool is usable again. Read by the pool's page and by /metrics
    (``loadmaster_nodepool_unusable``)."""

    PROVISION = "provision"
    DISRUPT = "disrupt"
    LOOPS = [(PROVISION, "provision"), (DISRUPT, "disrupt")]

    nodepool = models.CharField(max_length=63)
    loop = models.CharField(max_length=16, choices=LOOPS)
    reason = models.TextField()
    since = models.DateTimeField()       # first run that found this reason
    seen_at = models.DateTimeField()     # last run that found it

    class Meta:
        constraints = [models.UniqueConstraint(fields=["nodepool", "loop"], name="one_problem_per_pool_and_loop")]
        ordering = ["nodepool", "loop"]

    def __str__(self) -> str:
        return f"{self.nodepool} unusable for {self.loop}: {self.reason}"
