"""What this app tells others about its writes. The change history NodePools and CapacityBuffers have lives in
console.fleet, which imports this app (the Karpenter YAML import and export), so this app never imports it back: the
fleet app listens (console/fleet/apps.py) and records each change as it records a CapacityBuffer's."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the write's transaction after a NodeOverlay is created, updated or deleted, with key (its name),
# action ("created" | "updated" | "deleted"), before and after (its manifests, None when it did not or no longer
# exists), user (None for the system) and source ("form" | "api" | "import" | "system").
overlay_changed = Signal()
