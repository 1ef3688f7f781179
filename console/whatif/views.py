"""What-if pages: preview a NodePool/NodeClass edit, why a pod is pending, why a node is still here,
and snapshot replay. Every page needs a login (middleware); only storing a snapshot is a write."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import require_operator
from console.backends.factory import cluster_backend
from console.fleet import validation
from console.fleet.forms import NodeClassForm, NodePoolEditor
from console.fleet.models import EC2NodeClass, NodePool
from console.whatif import selectors, services
from console.whatif.forms import SnapshotForm
from console.whatif.models import Snapshot
from console.whatif.world import object_key
from packing.api import InputError


def _wants_fragment(request: HttpRequest) -> bool:
    # The Preview button fetches the result and inserts it into the edit page; without JS it is a page.
    return request.headers.get("X-Requested-With") == "fetch" or request.GET.get("fragment") == "1"


def _preview_response(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    template = "whatif/_preview_result.html" if _wants_fragment(request) else "whatif/preview.html"
    return render(request, template, context, status=status)


@require_POST
def nodepool_preview(request: HttpRequest, name: str | None = None) -> HttpResponse:
    """The NodePool edit form's data (same POST) → provisioning and consolidation with the edit in place.

    Read-only: the form is bound and validated, its values run through the engines, nothing is saved.
    """
    pool = get_object_or_404(NodePool, name=name) if name else None
    editor = NodePoolEditor(request.POST, instance=pool)
    context: dict[str, Any] = {"kind": "NodePool", "name": name or request.POST.get("name", ""),
                               "back": pool.get_absolute_url() if pool else None}
    if not editor.is_valid():
        context["errors"] = _form_errors(editor.form, *[f for fs in editor.formsets.values() for f in fs.forms])
        return _preview_response(request, context, status=400)
    values = editor.values()
    issues = validation.check_nodepool({**(pool.field_values() if pool else {}), **values})
    if issues:
        context["errors"] = [f"{i.field}: {i.located()}" for i in issues]
        return _preview_response(request, context, status=400)
    context["result"] = selectors.preview_nodepool_change(values=values, name=name, cluster=cluster_backend())
    return _preview_response(request, context)


@require_POST
def nodeclass_preview(request: HttpRequest, name: str | None = None) -> HttpResponse:
    nodeclass = get_object_or_404(EC2NodeClass, name=name) if name else None
    form = NodeClassForm(request.POST, instance=nodeclass)
    context: dict[str, Any] = {"kind": "EC2NodeClass", "name": name or request.POST.get("name", ""),
                               "back": nodeclass.get_absolute_url() if nodeclass else None}
    if form.is_valid():
        # What saving runs: the model's full_clean(), whose clean() is console/fleet/validation.py's
        # check_nodeclass, on the edit overlaid on the saved object (unique name is the save's own check).
        try:
            selectors.edited_instance(EC2NodeClass, form.values(), nodeclass).full_clean(validate_unique=False)
        except ValidationError as exc:
            form.place_errors(exc)
    if form.errors:
        context["errors"] = _form_errors(form)
        return _preview_response(request, context, status=400)
    context["result"] = selectors.preview_nodepool_change(values=form.values(), name=name, kind="nodeclass",
                                                         cluster=cluster_backend())
    return _preview_response(request, context)


def _form_errors(*forms: Any) -> list[str]:
    out = []
    for form in forms:
        for field, errs in form.errors.items():
            out += [f"{field}: {e}" if field != "__all__" else str(e) for e in errs]
    return out


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """Pending pods and nodes, each linking to its explanation."""
    cluster = cluster_backend()
    pending = sorted(tuple(object_key(p).split("/", 1)) for p in cluster.pending_pods())
    nodes = sorted((n.get("metadata") or {}).get("name", "") for n in cluster.list_nodes()[0])
    return render(request, "whatif/index.html", {"pending": pending, "nodes": nodes})


@require_GET
def pod_why(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    try:
        answer = selectors.why_pending(namespace, name, cluster=cluster_backend())
    except selectors.NotFound as exc:
        raise Http404(str(exc)) from None
    return render(request, "whatif/pod_why.html", {"answer": answer, "namespace": namespace, "name": name})


@require_GET
def node_why(request: HttpRequest, name: str) -> HttpResponse:
    try:
        cluster = cluster_backend()
        answer = selectors.why_node(name, cluster=cluster)
        health = selectors.node_health(name, cluster=cluster)
    except selectors.NotFound as exc:
        raise Http404(str(exc)) from None
    return render(request, "whatif/node_why.html", {"answer": answer, "name": name, "health": health})


# --- snapshots ---------------------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
def snapshot_list(request: HttpRequest) -> HttpResponse:
    form = SnapshotForm(request.POST or None, request.FILES or None)
    problem = ""
    status = 200
    if request.method == "POST":
        require_operator(request)
        if form.is_valid():
            try:
                files = form.sources(request.FILES.getlist("files"))
                snap = services.snapshot_create(name=form.cleaned_data["name"], files=files, user=request.user,
                                                taken_at=form.cleaned_data.get("taken_at"))
                messages.success(request, f"Snapshot {snap.name} stored.")
                return redirect(snap)
            except ValidationError as exc:
                problem = "; ".join(exc.messages)
            except InputError as exc:
                problem = str(exc)  # the CLI's message: file, document N, field
        status = 400
    return render(request, "whatif/snapshot_list.html", {
        "form": form, "problem": problem, "snapshots": selectors.snapshot_list(),
        "max_mb": services.MAX_SNAPSHOT_BYTES // 2**20}, status=status)


@require_POST
def snapshot_take_live(request: HttpRequest) -> HttpResponse:
    require_operator(request)
    now = timezone.now()
    text = selectors.live_snapshot_yaml(cluster=cluster_backend())
    snap = services.snapshot_create(name=request.POST.get("name") or f"live {now:%Y-%m-%d %H:%M}",
                                    files=[("live.yaml", text)], user=request.user, taken_at=now, source=Snapshot.LIVE)
    messages.success(request, f"Snapshot {snap.name} taken from the live cluster.")
    return redirect(snap)


@require_POST
def snapshot_replay(request: HttpRequest, pk: int) -> HttpResponse:
    """Replay the snapshot again (today's catalog) and store the result: an operator's explicit action."""
    require_operator(request)
    snap = get_object_or_404(Snapshot, pk=pk)
    services.snapshot_replay_store(snapshot=snap)
    if snap.replay_error:
        messages.error(request, f"Snapshot {snap.name} could not be replayed: {snap.replay_error}")
    else:
        messages.success(request, f"Snapshot {snap.name} replayed again.")
    return redirect(snap)


@require_GET
def snapshot_detail(request: HttpRequest, pk: int) -> HttpResponse:
    snap = get_object_or_404(Snapshot, pk=pk)
    replay = selectors.snapshot_replay(snap)
    return render(request, "whatif/snapshot_detail.html", {
        "snap": snap, "replay": replay, "others": Snapshot.objects.exclude(pk=pk).defer("yaml", "replay")[:50],
        "plan_json": replay and json.dumps(replay["plan"], indent=2),
        "consolidate_json": replay and json.dumps(replay["consolidate"], indent=2)})


OUTPUTS = ("plan", "consolidate", "both")


@require_GET
def snapshot_json(request: HttpRequest, pk: int) -> HttpResponse:
    snap = get_object_or_404(Snapshot, pk=pk)
    which = request.GET.get("output", "both")
    if which not in OUTPUTS:
        return JsonResponse({"output": [f"must be one of {', '.join(OUTPUTS)}"]}, status=400)
    replay = selectors.snapshot_replay(snap)
    if replay is None:
        return JsonResponse({"detail": _not_replayed(snap)}, status=409)
    body: Any = replay["plan"] if which == "plan" else replay["consolidate"] if which == "consolidate" \
        else {"plan": replay["plan"], "consolidate": replay["consolidate"]}
    response = JsonResponse(body, json_dumps_params={"indent": 2})
    # Django builds the header (quoting, RFC 5987 for non-ASCII); the name holds only known words anyway.
    response["Content-Disposition"] = content_disposition_header(True, f"snapshot-{snap.pk}-{which}.json")
    return response


def _not_replayed(snap: Snapshot) -> str:
    if snap.replay_error:
        return f"snapshot {snap.name} could not be replayed: {snap.replay_error}"
    return f"snapshot {snap.name} has not been replayed yet; an operator can replay it from its page"


@require_GET
def snapshot_compare(request: HttpRequest) -> HttpResponse:
    try:
        a = get_object_or_404(Snapshot, pk=int(request.GET.get("a", "")))
        b = get_object_or_404(Snapshot, pk=int(request.GET.get("b", "")))
    except ValueError:
        raise Http404("choose two snapshots (?a=ID&b=ID)") from None
    ra, rb = selectors.snapshot_replay(a), selectors.snapshot_replay(b)
    missing = [_not_replayed(s) for s, r in ((a, ra), (b, rb)) if r is None]
    if ra is None or rb is None:
        return render(request, "whatif/snapshot_compare.html", {"a": a, "b": b, "missing": missing}, status=409)
    comparison = selectors.snapshot_compare(ra, rb)
    rows = [(k, comparison["a"][k], comparison["b"][k]) for k in comparison["a"]]
    return render(request, "whatif/snapshot_compare.html", {"a": a, "b": b, "cmp": comparison, "rows": rows})
