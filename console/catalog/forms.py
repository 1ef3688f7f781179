from __future__ import annotations

from django import forms
from django.conf import settings

from console import adapters
from console.catalog.models import SELECTOR_HELP, SELECTOR_RE, PriceOverrideRule


class PriceOverrideForm(forms.ModelForm):
    class Meta:
        model = PriceOverrideRule
        fields = ["selector", "capacity_type", "price", "percent", "note", "position"]

    def clean_selector(self) -> str:
        selector = str(self.cleaned_data.get("selector") or "").strip()
        if not SELECTOR_RE.fullmatch(selector):
            raise forms.ValidationError(f"Not a selector: give {SELECTOR_HELP}.")
        if selector != "*":
            # A typo would silently match nothing: the family or type must be in the catalog.
            names = {t.name for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)}
            families = {n.partition(".")[0] for n in names}
            if selector not in names and selector not in families:
                raise forms.ValidationError(f"No instance type or family {selector!r} in the catalog.")
        return selector


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
