"""The NodeOverlay pages: the list with what each overlay does to the catalog (viewers read) and the form
(operators write)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from console.access import require_operator
from console.overlays import selectors, services
from console.overlays.forms import OverlayForm
from console.overlays.models import NodeOverlay


def overlay_list(request: HttpRequest) -> HttpResponse:
    return render(request, "overlays/overlay_list.html",
                  {"rows": selectors.overlay_rows(region=settings.LOADMASTER_AWS_REGION)})


def _get(name: str | None) -> NodeOverlay | None:
    if name is None:
        return None
    row = selectors.overlay_get(name=name)
    if row is None:
        raise Http404("no such NodeOverlay")
    return row


class OverlayEditView(View):
    template_name = "overlays/overlay_form.html"

    def get(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        return render(request, self.template_name, {"form": OverlayForm(instance=row), "overlay": row})

    def post(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        form = OverlayForm(request.POST, instance=row)
        if form.is_valid():
            values = {k: form.cleaned_data[k] for k in form.Meta.fields}
            try:
                if row is None:
                    row = services.overlay_create(values=values, user=request.user)
                else:
                    row = services.overlay_update(overlay=_get(name) or row, values=values, user=request.user)
                messages.success(request, f"NodeOverlay {row} saved.")
                return redirect("overlays:overlay-list")
            except ValidationError as exc:
                for field, errs in exc.message_dict.items():
                    for e in errs:
                        form.add_error(field if field in form.fields else None, e)
        return render(request, self.template_name, {"form": form, "overlay": row}, status=400)


class OverlayDeleteView(View):
    def post(self, request: HttpRequest, name: str) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        assert row is not None
        services.overlay_delete(overlay=row, user=request.user)
        messages.success(request, f"NodeOverlay {name} deleted.")
        return redirect(request.POST.get("next") or "overlays:overlay-list")
