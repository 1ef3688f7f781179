from __future__ import annotations

from django import forms
from django.conf import settings

from console import adapters
from console.catalog.models import CAPACITY_TYPES, SELECTOR_HELP, SELECTOR_RE


class PriceOverrideForm(forms.Form):
    """A price override: the catalog page's short form of a NodeOverlay (console/overlays writes it as one)."""

    selector = forms.CharField(max_length=64, help_text='An instance type ("m5.large"), a family ("m5") or "*" for all.')
    capacity_type = forms.ChoiceField(choices=CAPACITY_TYPES, initial="on-demand")
    price = forms.DecimalField(label="fixed $/hour", max_digits=12, decimal_places=6, required=False)
    percent = forms.DecimalField(label="adjustment %", max_digits=7, decimal_places=3, required=False,
                                 help_text="-20 means 20% cheaper than the list price.")
    weight = forms.IntegerField(required=False, help_text="1 to 10000: where overrides overlap, the higher weight wins.")
    note = forms.CharField(max_length=200, required=False, help_text='e.g. "Compute Savings Plan, 3 years"')

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
