from __future__ import annotations

from django import forms

from console.catalog.models import PriceOverrideRule


class PriceOverrideForm(forms.ModelForm):
    class Meta:
        model = PriceOverrideRule
        fields = ["selector", "capacity_type", "price", "percent", "note", "position"]


class CatalogFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search")
    family = forms.ChoiceField(required=False)
    category = forms.ChoiceField(required=False)
    arch = forms.ChoiceField(required=False, choices=[("", "any"), ("amd64", "amd64"), ("arm64", "arm64")])
    gpu = forms.BooleanField(required=False, label="GPU only")
    priced_only = forms.BooleanField(required=False, label="Priced only")

    def __init__(self, *args: object, choices: dict[str, list[str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["family"].choices = [("", "any")] + [(f, f) for f in choices["families"]]
        self.fields["category"].choices = [("", "any")] + [(c, c) for c in choices["categories"]]
