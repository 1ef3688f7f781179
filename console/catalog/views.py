from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from console.access import require_operator
from console.catalog import selectors, services
from console.catalog.forms import CatalogFilterForm, PriceOverrideForm
from console.commitments import coverage as commitment_coverage
from console.overlays import selectors as overlay_selectors


def _context(**extra: Any) -> dict[str, Any]:
    return {"summary": selectors.catalog_summary(), "overrides": overlay_selectors.overlay_list(),
            "override_form": PriceOverrideForm(), "vm_overhead_percent": selectors.VM_OVERHEAD_PERCENT, **extra}


def catalog(request: HttpRequest) -> HttpResponse:
    choices = selectors.catalog_choices()
    filters = CatalogFilterForm(request.GET or None, choices=choices)
    params = filters.cleaned_data if filters.is_bound and filters.is_valid() else {}
    rows = selectors.catalog_rows(**{k: v for k, v in params.items() if v})
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    coverage = commitment_coverage.coverage_by_type([r.itype for r in page.object_list], now=timezone.now())
    return render(request, "catalog/catalog.html", _context(filters=filters, page=page, coverage=coverage))


@require_POST
def override_create(request: HttpRequest) -> HttpResponse:
    require_operator(request)
    form = PriceOverrideForm(request.POST)
    if form.is_valid():
        try:
            overlay = services.price_override_create(values=form.cleaned_data, user=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Price override added as NodeOverlay {overlay.name} "
                                      f"({overlay.price_change()}).")
            return redirect("catalog:catalog")
    choices = selectors.catalog_choices()
    return render(request, "catalog/catalog.html", _context(
        filters=CatalogFilterForm(choices=choices), page=Paginator(selectors.catalog_rows(), 100).get_page(1),
        override_form=form), status=400)


@require_POST
def override_delete(request: HttpRequest, name: str) -> HttpResponse:
    require_operator(request)
    overlay = overlay_selectors.overlay_get(name=name)
    if overlay is None:
        raise Http404("no such NodeOverlay")
    services.price_override_delete(overlay=overlay, user=request.user)
    messages.success(request, f"Price override (NodeOverlay {name}) removed.")
    return redirect("catalog:catalog")
