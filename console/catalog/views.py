from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.access import require_operator
from console.catalog import selectors, services
from console.catalog.forms import CatalogFilterForm, PriceOverrideForm
from console.catalog.models import PriceOverrideRule


def catalog(request: HttpRequest) -> HttpResponse:
    choices = selectors.catalog_choices()
    filters = CatalogFilterForm(request.GET or None, choices=choices)
    params = filters.cleaned_data if filters.is_bound and filters.is_valid() else {}
    rows = selectors.catalog_rows(**{k: v for k, v in params.items() if v})
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    return render(request, "catalog/catalog.html", {
        "filters": filters, "page": page, "summary": selectors.catalog_summary(),
        "overrides": PriceOverrideRule.objects.all(), "override_form": PriceOverrideForm(),
        "vm_overhead_percent": selectors.VM_OVERHEAD_PERCENT,
    })


@require_POST
def override_create(request: HttpRequest) -> HttpResponse:
    require_operator(request)
    form = PriceOverrideForm(request.POST)
    if form.is_valid():
        try:
            rule = services.price_override_create(values=form.cleaned_data, user=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Price override added: {rule}.")
            return redirect("catalog:catalog")
    choices = selectors.catalog_choices()
    return render(request, "catalog/catalog.html", {
        "filters": CatalogFilterForm(choices=choices), "page": Paginator(selectors.catalog_rows(), 100).get_page(1),
        "summary": selectors.catalog_summary(), "overrides": PriceOverrideRule.objects.all(), "override_form": form,
        "vm_overhead_percent": selectors.VM_OVERHEAD_PERCENT,
    }, status=400)


@require_POST
def override_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    rule = get_object_or_404(PriceOverrideRule, pk=pk)
    services.price_override_delete(rule=rule, user=request.user)
    messages.success(request, "Price override removed.")
    return redirect("catalog:catalog")
