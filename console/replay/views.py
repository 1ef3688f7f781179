"""/whatif/replay/: start a replay (operators), follow its progress, read its result (everyone signed in). Thin:
the form parses, the services write, the selectors read."""

from __future__ import annotations

from typing import Any

import plotly
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import is_operator, require_operator
from console.replay import charts, selectors, services
from console.replay.forms import ReplayForm
from console.replay.models import Replay


def _get(pk: int) -> Replay:
    run = selectors.replay_get(pk=pk)
    if run is None:
        raise Http404("No such replay.")
    return run


def _initial(request: HttpRequest) -> dict[str, Any]:
    imported = None
    raw = request.GET.get("history", "")
    if raw.isdigit():
        imported = selectors.history_imports().filter(pk=int(raw)).first()
    start, end = selectors.default_window(imported=imported)
    initial: dict[str, Any] = {"start": start.strftime("%Y-%m-%d %H:%M:%S"), "end": end.strftime("%Y-%m-%d %H:%M:%S"),
                               "seed": 0, "history": imported}
    pick = request.GET.get("pick", "")
    if pick:
        initial["change"] = selectors.fleet_manifest_yaml(pick=pick)
    return initial


@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    """The start form and the replays so far. POST (operators; the role middleware refuses viewers) starts one."""
    if request.method == "POST":
        require_operator(request)
        form = ReplayForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                run = services.replay_start(start=data["start"], end=data["end"], seed=data["seed"],
                                            change_yaml=data["change"], imported=data["history"], user=request.user)
            except ValidationError as e:
                for field, errors in e.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                return redirect(run.get_absolute_url())
        status = 400
    else:
        form = ReplayForm(initial=_initial(request))
        status = 200
    return render(request, "replay/index.html", {
        "form": form, "replays": selectors.replay_list(limit=50), "fleet": selectors.fleet_choices(),
        "can_start": is_operator(request.user)}, status=status)


@require_GET
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get(pk)
    context: dict[str, Any] = {"run": run, "status": selectors.replay_status(run=run),
                               "can_cancel": is_operator(request.user) and not run.finished}
    if run.result is not None:
        runs, rows = selectors.result_rows(run.result)
        context.update(runs=runs, rows=rows, doc=run.result, days=selectors.result_days(run.result),
                       plotly_url=reverse("dashboards:plotly-js", args=[plotly.__version__]),
                       cost_chart=charts.cost_chart(run.result), pending_chart=charts.pending_chart(run.result))
    return render(request, "replay/detail.html", context)


@require_GET
def progress(request: HttpRequest, pk: int) -> JsonResponse:
    """What the progress bar polls."""
    return JsonResponse(selectors.replay_status(run=_get(pk)))


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    require_operator(request)
    services.replay_cancel(run=_get(pk))
    return redirect(reverse("replay:detail", args=[pk]))
