"""Signals the control loops send, so apps that build on the loops (console/history) hear of what happened
without the loops importing them."""

from __future__ import annotations

from django.dispatch import Signal

# an interruption notice handled for a node: node_name, event_kind ("spot_interruption", ...), now
node_interrupted = Signal()
