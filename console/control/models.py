"""State the control loops share between workers: locks with an expiry, the offerings AWS recently
refused and the disruption actions under way. All live in the database so any number of workers on
any number of machines agree on them. What the loops record for others to read (minute samples,
NodePools they could not use) lives in console.telemetry."""

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


class CapacityReservationStatus(models.Model):
    """A capacity reservation an EC2NodeClass's capacityReservationSelectorTerms resolved to at the last sync (the
    EC2NodeClass's status.capacityReservations in Karpenter): what the catalog offers as `reserved` capacity and what
    the Capacity Block loop watches the end of. Replaced wholesale per NodeClass at each sync."""

    DEFAULT = "default"
    CAPACITY_BLOCK = "capacity-block"
    TYPES = [(DEFAULT, "default"), (CAPACITY_BLOCK, "capacity-block")]

    nodeclass_name = models.CharField(max_length=253, db_index=True)
    reservation_id = models.CharField(max_length=64)
    instance_type = models.CharField(max_length=64)
    zone = models.CharField(max_length=32)
    available = models.IntegerField()        # AvailableInstanceCount at the sync
    total = models.IntegerField()            # TotalInstanceCount
    owner_id = models.CharField(max_length=32, blank=True, default="")
    instance_match_criteria = models.CharField(max_length=16)
    type = models.CharField(max_length=16, choices=TYPES, default=DEFAULT)
    interruptible = models.BooleanField(default=False)
    starts = models.DateTimeField(null=True, blank=True)
    ends = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, default="active")    # active | expiring
    synced_at = models.DateTimeField()

    class Meta:
        ordering = ["nodeclass_name", "reservation_id"]
        constraints = [models.UniqueConstraint(fields=["nodeclass_name", "reservation_id"],
                                               name="unique_nodeclass_reservation")]

    def __str__(self) -> str:
        return f"{self.reservation_id} ({self.type}, {self.instance_type} {self.zone}) of {self.nodeclass_name}"
