"""The fleet's objects, mirroring Karpenter v1: NodePool, EC2NodeClass and NodeClaim, plus the
decision ledger and the change history.

Nested parts of the specs (requirements, taints, budgets, selector terms…) are stored as JSON in
exactly Karpenter's spelling, so export is a direct copy and an import of an export is the same
object. Validation lives in validation.py and runs in clean(); services call full_clean() before
every save.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse
from django.utils import timezone

from console.fleet import validation
from packing.api import (
    CONSOLIDATE_AFTER_DEFAULT,
    CONSOLIDATION_POLICY_DEFAULT,
    EXPIRE_AFTER_DEFAULT,
    DurationError,
    parse_duration,
)


def _raise_issues(issues: list[validation.FieldIssue], field_names: set[str]) -> None:
    if not issues:
        return
    errors: dict[str, list[str]] = {}
    for issue in issues:
        key = issue.field if issue.field in field_names else "__all__"
        errors.setdefault(key, []).append(issue.located())
    raise ValidationError(errors)


class NodePool(models.Model):
    # The columns of the fields in fieldtable.NODEPOOL_FIELDS (tests/fleet/test_field_table.py checks they agree).
    POLICY_WHEN_EMPTY = "WhenEmpty"
    POLICY_WHEN_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
    POLICY_CHOICES = [(p, p) for p in validation.CONSOLIDATION_POLICIES]

    name = models.CharField(max_length=63, unique=True)
    metadata_labels = models.JSONField(default=dict, blank=True)       # the NodePool's own, not its nodes'
    metadata_annotations = models.JSONField(default=dict, blank=True)
    # metadata.annotations loadmaster.dev/on-demand-base and -percentage (packing.ondemandshare): "" when not set
    on_demand_base = models.CharField(max_length=20, blank=True, default="")
    on_demand_percentage = models.CharField(max_length=20, blank=True, default="")
    # metadata.annotations loadmaster.dev/schedules (packing.poolschedule): the clock-policy windows' YAML, "" for none
    schedules = models.TextField(blank=True, default="")
    template_labels = models.JSONField(default=dict, blank=True)
    template_annotations = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    startup_taints = models.JSONField(default=list, blank=True)
    requirements = models.JSONField(default=list, blank=True)
    node_class_name = models.CharField("nodeClassRef name", max_length=63, default="default")
    expire_after = models.CharField(max_length=32, default=EXPIRE_AFTER_DEFAULT)
    termination_grace_period = models.CharField(max_length=32, blank=True, default="")
    consolidation_policy = models.CharField(max_length=32, choices=POLICY_CHOICES,
                                            default=CONSOLIDATION_POLICY_DEFAULT)
    consolidate_after = models.CharField(max_length=32, default=CONSOLIDATE_AFTER_DEFAULT)
    budgets = models.JSONField(default=list, blank=True)
    limits = models.JSONField(default=dict, blank=True)
    weight = models.PositiveSmallIntegerField(null=True, blank=True)
    # spec.replicas: set, the pool is static (keeps this many nodes); None, dynamic. int64 as in the CRD.
    replicas = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)
    # Bumped on every change; the API and forms use it to refuse a stale overwrite.
    revision = models.PositiveIntegerField(default=1, editable=False)

    class Meta:
        ordering = ["-weight", "name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("fleet:nodepool-detail", args=[self.name])

    def field_values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self._meta.concrete_fields}

    def termination_grace(self) -> timedelta | None:
        """spec.template.spec.terminationGracePeriod, None when not set (a drain then waits for ever)."""
        if not self.termination_grace_period:
            return None
        try:
            return parse_duration(self.termination_grace_period, allow_never=False)
        except DurationError:   # validation refuses it; a row saved before must not stop a drain
            return None

    def clean(self) -> None:
        stored = NodePool.objects.filter(pk=self.pk).values("replicas").first() if self.pk else None
        before = None if stored is None else {"replicas": stored["replicas"]}
        _raise_issues(validation.check_nodepool(self.field_values(), before=before),
                      {f.name for f in self._meta.concrete_fields})


class EC2NodeClass(models.Model):
    # The columns of the fields in fieldtable.NODECLASS_FIELDS.
    name = models.CharField(max_length=63, unique=True)
    metadata_labels = models.JSONField(default=dict, blank=True)
    metadata_annotations = models.JSONField(default=dict, blank=True)
    ami_family = models.CharField(max_length=32, blank=True, default="")
    ami_selector_terms = models.JSONField(default=list, blank=True)
    subnet_selector_terms = models.JSONField(default=list, blank=True)
    security_group_selector_terms = models.JSONField(default=list, blank=True)
    role = models.CharField(max_length=255, blank=True, default="")
    instance_profile = models.CharField(max_length=255, blank=True, default="")
    tags = models.JSONField(default=dict, blank=True)
    block_device_mappings = models.JSONField(default=list, blank=True)
    kubelet = models.JSONField(default=dict, blank=True)
    metadata_options = models.JSONField(default=dict, blank=True)
    user_data = models.TextField(blank=True, default="")
    capacity_reservation_selector_terms = models.JSONField(default=list, blank=True)
    ip_prefix_count = models.PositiveIntegerField(null=True, blank=True)
    context = models.TextField(blank=True, default="")
    connection_tracking = models.JSONField(default=dict, blank=True)
    cpu_options = models.JSONField(default=dict, blank=True)
    network_interfaces = models.JSONField(default=list, blank=True)
    placement_group_selector = models.JSONField(default=dict, blank=True)
    instance_store_policy = models.CharField(max_length=16, blank=True, default="")  # "" or RAID0
    # None means "not set": Karpenter then uses the subnet's / AWS's default.
    detailed_monitoring = models.BooleanField(null=True, blank=True)
    associate_public_ip_address = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)
    revision = models.PositiveIntegerField(default=1, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = "EC2NodeClass"
        verbose_name_plural = "EC2NodeClasses"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("fleet:nodeclass-detail", args=[self.name])

    def field_values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self._meta.concrete_fields}

    def clean(self) -> None:
        _raise_issues(validation.check_nodeclass(self.field_values()),
                      {f.name for f in self._meta.concrete_fields})


class NodeClaimQuerySet(models.QuerySet["NodeClaim"]):
    def in_state(self, state: str) -> NodeClaimQuerySet:
        return self.filter(NodeClaim.state_filter(state))

    def active(self) -> NodeClaimQuerySet:
        return self.filter(terminated_at__isnull=True)


class NodeClaim(models.Model):
    """One node Loadmaster launched (or is launching), from request to termination."""

    CAPACITY_TYPES = [("spot", "spot"), ("on-demand", "on-demand"), ("reserved", "reserved")]
    # Lifecycle states, in order; a claim is in the latest state whose condition is set.
    STATES = ("pending", "launched", "registered", "initialized", "disrupting", "terminated")

    name = models.CharField(max_length=253, unique=True)
    nodepool = models.ForeignKey(NodePool, null=True, blank=True, on_delete=models.SET_NULL, related_name="nodeclaims")
    # Kept when the NodePool is deleted, so history stays readable.
    nodepool_name = models.CharField(max_length=63, db_index=True)
    instance_type = models.CharField(max_length=64, blank=True, default="")
    instance_type_options = models.JSONField(default=list, blank=True)
    capacity_type = models.CharField(max_length=16, choices=CAPACITY_TYPES, blank=True, default="")
    zone = models.CharField(max_length=32, blank=True, default="")
    price_per_hour = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    # Where the price came from ("snapshot 2026-01-19", "estimate", "live …", "override …"), so an
    # estimated spot price is never shown as if it were a billed one.
    price_source = models.CharField(max_length=64, blank=True, default="")
    instance_id = models.CharField(max_length=32, blank=True, default="", db_index=True)
    provider_id = models.CharField(max_length=128, blank=True, default="", db_index=True)
    node_name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    requests = models.JSONField(default=dict, blank=True)
    # Karpenter counts node capacity (not allocatable) against NodePool limits.
    capacity = models.JSONField(default=dict, blank=True)
    allocatable = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Set by the one worker that wins the conditional UPDATE to launch this claim: a second worker
    # (or a retried task) sees it set and does not call CreateFleet again.
    launch_started_at = models.DateTimeField(null=True, blank=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    registered_at = models.DateTimeField(null=True, blank=True)
    initialized_at = models.DateTimeField(null=True, blank=True)
    drifted_at = models.DateTimeField(null=True, blank=True)
    consolidatable_at = models.DateTimeField(null=True, blank=True)
    disrupting_at = models.DateTimeField(null=True, blank=True)
    terminated_at = models.DateTimeField(null=True, blank=True)
    termination_reason = models.CharField(max_length=255, blank=True, default="")
    # Set when the claim is to be removed whatever the disruption engine thinks (its NodePool was
    # deleted, its instance is being interrupted): the lifecycle loop cordons the node, drains it through
    # evictions (PodDisruptionBudgets respected), deletes it and terminates the instance, as Karpenter's
    # termination controller does for a NodeClaim with a deletionTimestamp.
    deletion_requested_at = models.DateTimeField(null=True, blank=True)
    deletion_reason = models.CharField(max_length=255, blank=True, default="")
    # What its termination waits for now ("1 eviction(s) blocked by PodDisruptionBudgets"), "" if nothing.
    deletion_status = models.CharField(max_length=255, blank=True, default="")
    # When its drain stops waiting: the NodePool's terminationGracePeriod after the drain began (Karpenter's
    # karpenter.sh/nodeclaim-termination-timestamp). Past it, PDBs and do-not-disrupt no longer hold the pods.
    termination_deadline = models.DateTimeField(null=True, blank=True)

    objects = NodeClaimQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "name"]
        indexes = [models.Index(fields=["nodepool_name", "terminated_at"])]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("fleet:nodeclaim-detail", args=[self.name])

    @property
    def nodepool_deleted(self) -> bool:
        """Its NodePool no longer exists (the row was deleted; ``nodepool_name`` keeps its name)."""
        return self.nodepool_id is None and bool(self.nodepool_name)

    @property
    def being_removed(self) -> bool:
        """Still running, but on its way out (drained, then terminated) whatever consolidation decides."""
        return self.terminated_at is None and self.deletion_requested_at is not None

    @property
    def state(self) -> str:
        if self.terminated_at:
            return "terminated"
        if self.disrupting_at:
            return "disrupting"
        if self.initialized_at:
            return "initialized"
        if self.registered_at:
            return "registered"
        if self.launched_at:
            return "launched"
        return "pending"

    @staticmethod
    def state_filter(state: str) -> models.Q:
        live = models.Q(terminated_at__isnull=True)
        not_disrupting = live & models.Q(disrupting_at__isnull=True)
        return {
            "terminated": models.Q(terminated_at__isnull=False),
            "disrupting": live & models.Q(disrupting_at__isnull=False),
            "initialized": not_disrupting & models.Q(initialized_at__isnull=False),
            "registered": not_disrupting & models.Q(initialized_at__isnull=True, registered_at__isnull=False),
            "launched": not_disrupting & models.Q(initialized_at__isnull=True, registered_at__isnull=True,
                                                  launched_at__isnull=False),
            "pending": not_disrupting & models.Q(launched_at__isnull=True, registered_at__isnull=True,
                                                 initialized_at__isnull=True),
        }[state]

    def conditions(self) -> list[tuple[str, Any]]:
        """The lifecycle conditions with their times, in Karpenter's order (unset ones as None)."""
        return [
            ("Launched", self.launched_at), ("Registered", self.registered_at),
            ("Initialized", self.initialized_at), ("Drifted", self.drifted_at),
            ("Consolidatable", self.consolidatable_at), ("Disrupting", self.disrupting_at),
            ("Terminated", self.terminated_at),
        ]


class Decision(models.Model):
    """The ledger: one row per launch, disruption or unschedulable verdict, with its why."""

    LAUNCH = "launch"
    DISRUPTION = "disruption"
    UNSCHEDULABLE = "unschedulable"
    INTERRUPTION = "interruption"
    FAILURE = "failure"
    KIND_CHOICES = [(LAUNCH, "Launch"), (DISRUPTION, "Disruption"), (UNSCHEDULABLE, "Unschedulable"),
                    (INTERRUPTION, "Interruption"), (FAILURE, "Failure")]

    at = models.DateTimeField(default=timezone.now, db_index=True)
    kind = models.CharField(max_length=16, choices=KIND_CHOICES, db_index=True)
    nodepool = models.ForeignKey(NodePool, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions")
    nodepool_name = models.CharField(max_length=63, blank=True, default="", db_index=True)
    nodes = models.JSONField(default=list, blank=True)
    pods = models.JSONField(default=list, blank=True)
    cost_before = models.DecimalField("cost per hour before", max_digits=12, decimal_places=6, null=True, blank=True)
    cost_after = models.DecimalField("cost per hour after", max_digits=12, decimal_places=6, null=True, blank=True)
    why = models.TextField()
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.at:%Y-%m-%d %H:%M} {self.nodepool_name}"

    def get_absolute_url(self) -> str:
        return reverse("fleet:decision-detail", args=[self.pk])

    @property
    def savings_per_hour(self) -> Any:
        if self.cost_before is None or self.cost_after is None:
            return None
        return self.cost_before - self.cost_after


class ChangeRecord(models.Model):
    """Who changed a NodePool, NodeClass, CapacityBuffer, NodeOverlay or Commitment, when, how, and what changed
    (field by field)."""

    NODEPOOL = "nodepool"
    NODECLASS = "ec2nodeclass"
    CAPACITYBUFFER = "capacitybuffer"  # object_name is the buffer's namespace/name (console/buffers)
    NODEOVERLAY = "nodeoverlay"  # console/overlays
    COMMITMENT = "commitment"  # console/commitments
    OBJECT_TYPES = [(NODEPOOL, "NodePool"), (NODECLASS, "EC2NodeClass"), (CAPACITYBUFFER, "CapacityBuffer"),
                    (NODEOVERLAY, "NodeOverlay"), (COMMITMENT, "Commitment")]
    ACTIONS = [("created", "created"), ("updated", "updated"), ("deleted", "deleted")]
    SOURCES = [("form", "form"), ("api", "API"), ("import", "YAML import"), ("demo", "demo"), ("system", "system")]

    object_type = models.CharField(max_length=16, choices=OBJECT_TYPES)
    # a CapacityBuffer's namespace (63) / name (253)
    object_name = models.CharField(max_length=317)
    action = models.CharField(max_length=16, choices=ACTIONS)
    source = models.CharField(max_length=16, choices=SOURCES)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150, blank=True, default="")
    at = models.DateTimeField(default=timezone.now)
    # {"spec.weight": [old, new], ...} in Karpenter YAML paths, the words operators know.
    changes = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_name", "-at"])]

    def __str__(self) -> str:
        return f"{self.object_type}/{self.object_name} {self.action} by {self.username or 'system'}"


class Heartbeat(models.Model):
    """When a Celery worker last ran the periodic heartbeat task: shows that the loops are alive."""

    name = models.CharField(max_length=64, unique=True)
    at = models.DateTimeField()
    worker = models.CharField(max_length=255, blank=True, default="")
