"""The form that starts a replay: the window, the history (recorded or imported), the change, the seed. The
change is checked by the service (packing.replay.change_manifests), whose errors land at the field."""

from __future__ import annotations

from typing import Any

from django import forms

from console.history.models import HistoryImport


class ReplayForm(forms.Form):
    history = forms.ModelChoiceField(queryset=HistoryImport.objects.all(), required=False,
                                     empty_label="the recorded history", label="History",
                                     help_text="the cluster's recorded history, or one imported (POST /api/history/)")
    start = forms.DateTimeField(label="From (UTC)", help_text="default: 7 days before the end of the history")
    end = forms.DateTimeField(label="To (UTC)")
    change = forms.CharField(
        required=False, label="Change: NodePools / EC2NodeClasses (YAML)",
        widget=forms.Textarea(attrs={"rows": 16, "class": "mono", "spellcheck": "false"}),
        help_text="each replaces the object of its kind and name for the whole window (a new name adds one); "
                  "empty: replay the configuration in force only")
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1,
                              help_text="the seed of the choices a replay makes at random")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["history"].label_from_instance = lambda h: f"import {h.pk}: {h.name or 'unnamed'}"
