"""The snapshot upload form: several files and/or pasted YAML, checked with the CLI's parser."""

from __future__ import annotations

from typing import Any

from django import forms

from console.fleet.forms import MultipleFileField, MultipleFileInput, yaml_sources
from console.whatif.services import MAX_SNAPSHOT_BYTES


class SnapshotForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="e.g. “prod, Monday 09:00”")
    text = forms.CharField(required=False, label="Paste YAML", widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}))
    files = MultipleFileField(required=False, label="…or upload files (kubectl get pods,nodes,pdb,daemonsets -A -o yaml, NodePools)",
                              widget=MultipleFileInput(attrs={"accept": ".yaml,.yml,.json"}))
    taken_at = forms.DateTimeField(required=False, label="Clock for budgets and consolidateAfter (default: now)")

    def sources(self, uploaded: list[Any]) -> list[tuple[str, str]]:
        return yaml_sources(uploaded, self.cleaned_data.get("text", ""), max_bytes=MAX_SNAPSHOT_BYTES)
