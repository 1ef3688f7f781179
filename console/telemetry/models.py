"""What the control loops record about the cluster and about themselves, for the dashboards, the
alerts, the NodePool pages and /metrics to read: one sample per minute and per NodePool and its
hourly rollups, the loops' run durations, the pods' startup times, and the NodePools a loop could not
use.

The models moved here from console.control and console.dashboards; each keeps its table
(``Meta.db_table``), so an existing database keeps its rows (migrations/0001_initial.py)."""

from __future__ import annotations

from django.db import models


class MetricSample(models.Model):
    """One minute of one NodePool (nodepool "" is the whole cluster): what the dashboards and alerts
    read. Costs are per hour; cpu in millicores, memory in bytes."""

    at = models.DateTimeField(db_index=True)
    nodepool = models.CharField(max_length=63, blank=True, default="")
    nodes = models.PositiveIntegerField(default=0)
    spot_nodes = models.PositiveIntegerField(default=0)
    # nodes on a capacity reservation (karpenter.sh/capacity-type=reserved): neither spot nor on-demand
    reserved_nodes = models.PositiveIntegerField(default=0)
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
    # Whole-cluster rows only: what the CapacityBuffers' virtual pods cost per hour on the live nodes (held) and
    # with the nodes a plan for them alone would add (total); null when not computed that minute.
    headroom_held_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    headroom_total_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    # cost_per_hour less what Reserved Instances and Savings Plans pay for (CommitmentSample.covered_per_hour):
    # what the priced nodes add to the bill above the commitments. Null in samples recorded before it existed.
    effective_cost_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)

    class Meta:
        db_table = "control_metricsample"  # the table it had before it moved here: existing rows stay
        constraints = [models.UniqueConstraint(fields=["at", "nodepool"], name="one_sample_per_minute_and_pool")]
        indexes = [models.Index(fields=["nodepool", "at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.nodepool or 'cluster'} ${self.cost_per_hour}/h"


class MetricRollup(models.Model):
    """One hour of one NodePool (nodepool "" is the whole cluster). Sums and counts rather than means,
    so every dashboard figure — hourly means, window totals, month to date — comes out the same as
    when computed from the minute samples themselves."""

    hour = models.DateTimeField()
    nodepool = models.CharField(max_length=63, blank=True, default="")
    samples = models.PositiveIntegerField(default=0)
    estimated_samples = models.PositiveIntegerField(default=0)
    cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    on_demand_cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    nodes_sum = models.BigIntegerField(default=0)
    spot_nodes_sum = models.BigIntegerField(default=0)
    reserved_nodes_sum = models.BigIntegerField(default=0)
    cpu_allocatable_sum = models.BigIntegerField(default=0)
    cpu_requested_sum = models.BigIntegerField(default=0)
    memory_allocatable_sum = models.BigIntegerField(default=0)
    memory_requested_sum = models.BigIntegerField(default=0)
    pods_sum = models.BigIntegerField(default=0)
    pods_pending_sum = models.BigIntegerField(default=0)
    nodes_max = models.PositiveIntegerField(default=0)
    pods_pending_max = models.PositiveIntegerField(default=0)
    # The lower bound is null in some minutes: its mean and the cost it is compared with are taken
    # over the same minutes (those with a bound), or the gap would mix different hours' worth of cost.
    bound_samples = models.PositiveIntegerField(default=0)
    lower_bound_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    bounded_cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    # {reason: Σ pending pods over the hour's samples}; ÷ samples gives the mean.
    unschedulable_reasons_sum = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "dashboards_metricrollup"  # the table it had before it moved here: existing rows stay
        constraints = [models.UniqueConstraint(fields=["hour", "nodepool"], name="one_rollup_per_hour_and_pool")]
        indexes = [models.Index(fields=["nodepool", "hour"])]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.nodepool or 'cluster'} ({self.samples} samples)"


class DurationStat(models.Model):
    """Cumulative figures of one timed operation of one control loop, kept in the database so every
    web process serves the same counters (see console.telemetry.loop_stats). ``metric`` is
    "reconcile" (a whole task run: controller_runtime_reconcile_*) or "scheduling" (the engine's
    simulation inside a loop: karpenter_scheduler_scheduling_duration_seconds)."""

    metric = models.CharField(max_length=16)
    controller = models.CharField(max_length=64)
    runs = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    seconds_sum = models.FloatField(default=0.0)

    class Meta:
        db_table = "dashboards_durationstat"  # the table it had before it moved here: existing rows stay
        constraints = [models.UniqueConstraint(fields=["metric", "controller"], name="one_duration_stat")]

    def __str__(self) -> str:
        return f"{self.metric} {self.controller}: {self.runs} runs, {self.errors} errors"


class DurationBucket(models.Model):
    """One cumulative histogram bucket (runs that took at most ``le`` seconds) of a DurationStat:
    a fixed set of rows per loop (Karpenter's duration buckets), incremented in SQL."""

    metric = models.CharField(max_length=16)
    controller = models.CharField(max_length=64)
    le = models.FloatField()
    count = models.BigIntegerField(default=0)

    class Meta:
        db_table = "dashboards_durationbucket"  # the table it had before it moved here: existing rows stay
        constraints = [models.UniqueConstraint(fields=["metric", "controller", "le"], name="one_duration_bucket")]

    def __str__(self) -> str:
        return f"{self.metric} {self.controller} le={self.le}: {self.count}"


class PodStartup(models.Model):
    """One pod seen to become Ready: the time from its creation to its Ready condition's transition
    (karpenter_pods_startup_duration_seconds). Rows older than a day are folded into SummaryCarry."""

    uid = models.CharField(max_length=128, unique=True)
    started_at = models.DateTimeField(db_index=True)
    seconds = models.FloatField()

    class Meta:
        db_table = "dashboards_podstartup"  # the table it had before it moved here: existing rows stay

    def __str__(self) -> str:
        return f"{self.uid} ready after {self.seconds:.1f} s"


class SummaryCarry(models.Model):
    """The count and sum of observations pruned from a summary's table, so _count and _sum never go
    down when old rows are deleted."""

    metric = models.CharField(max_length=64, unique=True)
    count = models.BigIntegerField(default=0)
    seconds_sum = models.FloatField(default=0.0)

    class Meta:
        db_table = "dashboards_summarycarry"  # the table it had before it moved here: existing rows stay

    def __str__(self) -> str:
        return f"{self.metric}: {self.count} pruned observations"


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
        db_table = "control_nodepoolproblem"  # the table it had before it moved here: existing rows stay
        constraints = [models.UniqueConstraint(fields=["nodepool", "loop"], name="one_problem_per_pool_and_loop")]
        ordering = ["nodepool", "loop"]

    def __str__(self) -> str:
        return f"{self.nodepool} unusable for {self.loop}: {self.reason}"



class ConsolidationMoveStat(models.Model):
    """Karpenter's karpenter_consolidation_moves_total and karpenter_consolidation_score (count, sum) for one
    label set (decision, nodepool, policy), kept in the database as DurationStat is (see
    console.telemetry.consolidation_scores). ``moves`` counts every evaluated consolidation move; ``scored``
    and ``score_sum`` only the Balanced pools' (the histogram's)."""

    decision = models.CharField(max_length=16)
    nodepool = models.CharField(max_length=63)
    policy = models.CharField(max_length=32)
    moves = models.BigIntegerField(default=0)
    scored = models.BigIntegerField(default=0)
    score_sum = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["decision", "nodepool", "policy"],
                                               name="one_consolidation_move_stat")]

    def __str__(self) -> str:
        return f"{self.nodepool} {self.policy} {self.decision}: {self.moves} moves"


class ConsolidationScoreBucket(models.Model):
    """One cumulative bucket (scores at most ``le``) of karpenter_consolidation_score for one label set."""

    decision = models.CharField(max_length=16)
    nodepool = models.CharField(max_length=63)
    policy = models.CharField(max_length=32)
    le = models.FloatField()
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["decision", "nodepool", "policy", "le"],
                                               name="one_consolidation_score_bucket")]

    def __str__(self) -> str:
        return f"{self.nodepool} {self.policy} {self.decision} le={self.le}: {self.count}"


class CommitmentSample(models.Model):
    """One minute of one commitment (a Reserved Instance, a Savings Plan: console/commitments) or capacity
    reservation (an ODCR or Capacity Block an EC2NodeClass selects), over the live nodes: what it holds (`total`,
    in `unit`), what the running nodes use of it, and what its unused part costs per hour. Written by the metrics
    loop (console/control/commitment_metrics.py) next to the MetricSample of the same minute; read by the
    Commitments dashboard and the commitment alerts."""

    RESERVED_INSTANCES = "ReservedInstances"
    COMPUTE_SAVINGS_PLAN = "ComputeSavingsPlan"
    EC2_INSTANCE_SAVINGS_PLAN = "EC2InstanceSavingsPlan"
    RESERVATION = "reservation"
    CAPACITY_BLOCK = "capacity-block"
    KINDS = [(RESERVED_INSTANCES, "Reserved Instances"), (COMPUTE_SAVINGS_PLAN, "Compute Savings Plan"),
             (EC2_INSTANCE_SAVINGS_PLAN, "EC2 Instance Savings Plan"), (RESERVATION, "capacity reservation"),
             (CAPACITY_BLOCK, "Capacity Block")]

    at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=32, choices=KINDS)
    name = models.CharField(max_length=253)   # the commitment's name, or the reservation's id
    # a reservation's instance type and zone (the catalog and NodePool pages' coverage reads them); "" otherwise
    instance_type = models.CharField(max_length=64, blank=True, default="")
    zone = models.CharField(max_length=32, blank=True, default="")
    unit = models.CharField(max_length=32)    # "instances", "normalized units", "$/h"
    total = models.FloatField()
    used = models.FloatField()
    covered_nodes = models.PositiveIntegerField(default=0)
    # $/h of the live nodes' list price this commitment pays for (what it takes off their cost this minute).
    covered_per_hour = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    # $/h the unused part costs: a Savings Plan's unused commitment; a Reserved Instance's or an ODCR's free
    # instances at the type's on-demand price. Null when unknown (no price for the type, a Capacity Block, a
    # size-flexible RI without a size): never read as $0.
    unused_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["at", "kind", "name"], name="one_commitment_sample_per_minute")]
        indexes = [models.Index(fields=["kind", "name", "at"])]

    @property
    def left(self) -> float:
        return max(0.0, self.total - self.used)

    @property
    def utilization(self) -> float | None:
        """The used share (0..1); None for a commitment of nothing."""
        return self.used / self.total if self.total > 0 else None

    @property
    def unused_basis(self) -> str:
        """Where the unused $/h comes from (the dashboard says it next to the figure)."""
        if self.kind in (self.COMPUTE_SAVINGS_PLAN, self.EC2_INSTANCE_SAVINGS_PLAN):
            return "the plan's hourly commitment less what the nodes use of it"
        if self.unused_per_hour is None:
            if self.kind == self.CAPACITY_BLOCK:
                return "unknown: a Capacity Block's price is paid up front and not recorded"
            return "unknown: no on-demand price for the type (or a size-flexible RI without a size)"
        if self.kind == self.RESERVED_INSTANCES:
            return "unused instances (units) at the type's on-demand price"
        return "free instances at the type's on-demand price (AWS bills a reservation at the On-Demand rate)"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.kind} {self.name}: {self.used:g}/{self.total:g} {self.unit}"
