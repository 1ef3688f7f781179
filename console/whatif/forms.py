"""The snapshot upload form: several files and/or pasted YAML, checked with the CLI's parser."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.fleet.forms import MultipleFileField, MultipleFileInput
from console.whatif.services import MAX_SNAPSHOT_BYTES


class SnapshotForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="e.g. “prod, Monday 09:00”")
    text = forms.CharField(required=False, label="Paste YAML", widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}))
    files = MultipleFileField(required=False, label="…or upload files (kubectl get pods,nodes,pdb,daemonsets -A -o yaml, NodePools)",
                              widget=MultipleFileInput(attrs={"accept": ".yaml,.yml,.json"}))
    taken_at = forms.DateTimeField(required=False, label="Clock for budgets and consolidateAfter (default: now)")

    def sources(self, uploaded: list[Any]) -> list[tuple[str, str]]:
        result: list[tuple[str, str]] = []
        total = 0
        for upload in uploaded:
            total += upload.size or 0
            if total > MAX_SNAPSHOT_BYTES:  # refuse before decoding: the limit protects memory too
                raise ValidationError(f"{upload.name}: the snapshot exceeds {MAX_SNAPSHOT_BYTES // 2**20} MB")
            try:
                result.append((upload.name, upload.read().decode("utf-8")))
            except UnicodeDecodeError:
                raise ValidationError(f"{upload.name}: not UTF-8 text") from None
        if self.cleaned_data.get("text", "").strip():
            result.append(("pasted YAML", self.cleaned_data["text"]))
        if not result:
            raise ValidationError("Paste YAML or choose at least one file.")
        return result
