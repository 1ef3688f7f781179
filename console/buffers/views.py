"""The CapacityBuffer pages: the list (viewers read) and the form (operators write)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from console.access import require_operator
from console.buffers import selectors, services
from console.buffers.forms import BufferForm
from console.buffers.models import CapacityBuffer


def buffer_list(request: HttpRequest) -> HttpResponse:
    return render(request, "buffers/buffer_list.html", {"buffers": selectors.buffer_list()})


def _get(namespace: str | None, name: str | None) -> CapacityBuffer | None:
    if namespace is None or name is None:
        return None
    buffer = selectors.buffer_get(namespace=namespace, name=name)
    if buffer is None:
        raise Http404("no such CapacityBuffer")
    return buffer


class BufferEditView(View):
    template_name = "buffers/buffer_form.html"

    def get(self, request: HttpRequest, namespace: str | None = None, name: str | None = None) -> HttpResponse:
        require_operator(request)
        buffer = _get(namespace, name)
        return render(request, self.template_name, {"form": BufferForm(instance=buffer), "buffer": buffer})

    def post(self, request: HttpRequest, namespace: str | None = None, name: str | None = None) -> HttpResponse:
        require_operator(request)
        buffer = _get(namespace, name)
        form = BufferForm(request.POST, instance=buffer)
        if form.is_valid():
            values = {k: form.cleaned_data[k] for k in form.Meta.fields}
            try:
                if buffer is None:
                    buffer = services.buffer_create(values=values, user=request.user)
                else:
                    buffer = services.buffer_update(buffer=_get(namespace, name) or buffer, values=values,
                                                    user=request.user)
                messages.success(request, f"CapacityBuffer {buffer} saved.")
                return redirect("buffers:buffer-list")
            except ValidationError as exc:
                for field, errs in exc.message_dict.items():
                    for e in errs:
                        form.add_error(None if field == "__all__" else field, e)
        return render(request, self.template_name, {"form": form, "buffer": buffer}, status=400)


class BufferDeleteView(View):
    def post(self, request: HttpRequest, namespace: str, name: str) -> HttpResponse:
        require_operator(request)
        buffer = _get(namespace, name)
        assert buffer is not None
        services.buffer_delete(buffer=buffer, user=request.user)
        messages.success(request, f"CapacityBuffer {namespace}/{name} deleted.")
        return redirect("buffers:buffer-list")
