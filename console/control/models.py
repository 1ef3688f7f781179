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
