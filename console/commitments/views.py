"""The Commitment pages: the list (viewers read) and the form (operators write)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from console.access import require_operator
from console.commitments import selectors, services
from console.commitments.forms import CommitmentForm
from console.commitments.models import Commitment


def commitment_list(request: HttpRequest) -> HttpResponse:
    return render(request, "commitments/commitment_list.html", {"commitments": selectors.commitment_list()})


def _get(name: str | None) -> Commitment | None:
    if name is None:
        return None
    row = selectors.commitment_get(name=name)
    if row is None:
        raise Http404("no such Commitment")
    return row


class CommitmentEditView(View):
    template_name = "commitments/commitment_form.html"

    def get(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        return render(request, self.template_name, {"form": CommitmentForm(instance=row), "commitment": row})

    def post(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        form = CommitmentForm(request.POST, instance=row)
        if form.is_valid():
            values = {k: form.cleaned_data[k] for k in form.Meta.fields}
            try:
                if row is None:
                    row = services.commitment_create(values=values, user=request.user)
                else:
                    row = services.commitment_update(commitment=_get(name) or row, values=values, user=request.user)
                messages.success(request, f"Commitment {row} saved.")
                return redirect("commitments:commitment-list")
            except ValidationError as exc:
                for field, errs in exc.message_dict.items():
                    for e in errs:
                        form.add_error(field if field in form.fields else None, e)
        return render(request, self.template_name, {"form": form, "commitment": row}, status=400)


class CommitmentDeleteView(View):
    def post(self, request: HttpRequest, name: str) -> HttpResponse:
        require_operator(request)
        row = _get(name)
        assert row is not None
        services.commitment_delete(commitment=row, user=request.user)
        messages.success(request, f"Commitment {name} deleted.")
        return redirect("commitments:commitment-list")
