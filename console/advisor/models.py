"""What the "new advisor finding" alert rules have already told about: one row per rule and finding (code and
objects), kept while the finding lasts, so that each finding is sent once and one that goes and comes back
is new again."""

from __future__ import annotations

from django.db import models


class AlertedFinding(models.Model):
    rule = models.ForeignKey("alerts.AlertRule", on_delete=models.CASCADE, related_name="advisor_findings")
    key = models.CharField("code and objects", max_length=600)
    first_seen = models.DateTimeField()

    class Meta:
        ordering = ["rule", "key"]
        constraints = [models.UniqueConstraint(fields=["rule", "key"], name="advisor_one_row_per_rule_finding")]

    def __str__(self) -> str:
        return self.key
