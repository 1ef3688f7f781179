"""Pages of the console. Views parse the request, call one service or selector and render: no
business logic lives here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views import View

from console.access import require_operator
from console.fleet import fieldtable, selectors, services
from console.fleet.filters import (
    DecisionFilterSet,
    EC2NodeClassFilterSet,
    NodeClaimFilterSet,
    NodePoolFilterSet,
)
from console.fleet.forms import ImportForm, NodeClassForm, NodePoolEditor, ScaleForm
from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool

# Label keys offered as suggestions in the requirement rows (free text is still accepted).
SUGGESTED_KEYS = [
    "karpenter.sh/capacity-type", "topology.kubernetes.io/zone", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-local-nvme",
]


def _page(request: HttpRequest, queryset: Any, per_page: int = 50) -> Any:
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def _yaml_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- NodePools --------------------------------------------------------------------------------------

def nodepool_list(request: HttpRequest) -> HttpResponse:
    filterset = NodePoolFilterSet(request.GET, queryset=NodePool.objects.all())
    pools = selectors.nodepool_list(queryset=filterset.qs)
    deleted = selectors.deleted_nodepools() if not request.GET else []   # "NodePool deleted", still billed
    return render(request, "fleet/nodepool_list.html", {
        "filter": filterset, "pools": pools, "deleted_pools": deleted,
        "total_nodes": sum(u.nodes for u in pools) + sum(d.nodes for d in deleted),
        "total_cost_per_hour": selectors.fleet_cost_per_hour(usages=pools, deleted=deleted)})


# Cards of the NodePool page that apps building on the fleet compute (console.control's on-demand share, read
# from the live cluster through the adapters), by template variable; registered from their AppConfig.ready.
NODEPOOL_CARDS: dict[str, Callable[[NodePool], Any]] = {}


def nodepool_card_register(*, name: str, card: Callable[[NodePool], Any]) -> None:
    NODEPOOL_CARDS[name] = card


def nodepool_detail(request: HttpRequest, name: str, *, scale_form: ScaleForm | None = None,
                    status: int = 200) -> HttpResponse:
    pool = get_object_or_404(NodePool, name=name)
    if scale_form is None and pool.replicas is not None:
        scale_form = ScaleForm(initial={"replicas": pool.replicas, "revision": pool.revision})
    windows, windows_problem = selectors.nodepool_windows(nodepool=pool, now=timezone.now())
    return render(request, "fleet/nodepool_detail.html", {
        "pool": pool, "scale_form": scale_form, "windows": windows, "windows_problem": windows_problem,
        "spec_rows": fieldtable.detail_rows(fieldtable.NODEPOOL_FIELDS, pool.field_values()),
        "usage": selectors.nodepool_usage(nodepool=pool),
        **{name: card(pool) for name, card in NODEPOOL_CARDS.items()},
        "manifest": services.karpenter_export([pool]),
        "nodeclaims": NodeClaim.objects.active().filter(nodepool_name=pool.name)[:100],
        "decisions": selectors.recent_decisions(nodepool_name=pool.name),
        "history": selectors.change_history(object_type=ChangeRecord.NODEPOOL, name=pool.name),
        "nodeclass_exists": EC2NodeClass.objects.filter(name=pool.node_class_name).exists(),
    }, status=status)



def nodepool_scale(request: HttpRequest, name: str) -> HttpResponse:
    """POST: set a static NodePool's replicas (operators only, as every write); errors show at the form."""
    require_operator(request)
    pool = get_object_or_404(NodePool, name=name)
    if request.method != "POST":
        return redirect(pool)
    form = ScaleForm(request.POST)
    if form.is_valid():
        try:
            services.nodepool_scale(nodepool=pool, replicas=form.cleaned_data["replicas"], user=request.user,
                                    source="form", expected_revision=form.cleaned_data.get("revision"))
            messages.success(request, f"NodePool {pool.name} scaled to {form.cleaned_data['replicas']} replica(s).")
            return redirect(pool)
        except services.StaleRevision as exc:
            form.add_error(None, exc)
        except ValidationError as exc:
            for field, problems in getattr(exc, "message_dict", {"__all__": exc.messages}).items():
                for problem in problems:
                    form.add_error("replicas" if field == "replicas" else None,
                                   problem if field in ("replicas", "__all__") else f"{field}: {problem}")
    return nodepool_detail(request, name, scale_form=form, status=400)


class NodePoolEditView(View):
    template_name = "fleet/nodepool_form.html"

    def _render(self, request: HttpRequest, editor: NodePoolEditor, pool: NodePool | None, status: int = 200) -> HttpResponse:
        return render(request, self.template_name, {
            "editor": editor, "form": editor.form, "formsets": editor.formsets, "pool": pool,
            "nodeclass_names": list(EC2NodeClass.objects.values_list("name", flat=True)),
            "label_keys": SUGGESTED_KEYS,
        }, status=status)

    def get(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        pool = get_object_or_404(NodePool, name=name) if name else None
        return self._render(request, NodePoolEditor(instance=pool), pool)

    def post(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        pool = get_object_or_404(NodePool, name=name) if name else None
        editor = NodePoolEditor(request.POST, instance=pool)
        if editor.is_valid():
            values = editor.values()
            try:
                if pool is None:
                    pool = services.nodepool_create(values=values, user=request.user, source="form")
                    messages.success(request, f"NodePool {pool.name} created.")
                else:
                    pool = services.nodepool_update(nodepool=pool, values=values, user=request.user, source="form",
                                                    expected_revision=editor.expected_revision)
                    messages.success(request, f"NodePool {pool.name} saved.")
                return redirect(pool)
            except services.StaleRevision as exc:
                editor.form.add_error(None, exc)
            except ValidationError as exc:
                editor.place_errors(exc)
            if pool is not None and pool.pk:
                pool.refresh_from_db()
        return self._render(request, editor, pool if pool and pool.pk else None, status=400)


class _DeleteView(View):
    # GET asks, POST deletes; an HTTP DELETE would land on the delete(obj, request) helper below.
    http_method_names = ["get", "post", "head", "options"]
    model: type[Model]
    template_name = "fleet/confirm_delete.html"
    list_url = ""

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        require_operator(request)
        obj = get_object_or_404(self.model, name=name)
        return render(request, self.template_name, {"object": obj, "kind": self.model._meta.verbose_name,
                                                    "cancel_url": obj.get_absolute_url(),  # type: ignore[attr-defined]
                                                    "impact": selectors.nodepool_deletion_impact(nodepool=obj)
                                                    if isinstance(obj, NodePool) else None})

    def post(self, request: HttpRequest, name: str) -> HttpResponse:
        require_operator(request)
        obj = get_object_or_404(self.model, name=name)
        try:
            self.delete(obj, request)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
            return redirect(obj)  # type: ignore[arg-type]
        messages.success(request, f"{self.model._meta.verbose_name} {name} deleted.")
        return redirect(self.list_url)

    def delete(self, obj: Any, request: HttpRequest) -> None:
        raise NotImplementedError


class NodePoolDeleteView(_DeleteView):
    model = NodePool
    list_url = "fleet:nodepool-list"

    def delete(self, obj: Any, request: HttpRequest) -> None:
        services.nodepool_delete(nodepool=obj, user=request.user, source="form")


class NodeClassDeleteView(_DeleteView):
    model = EC2NodeClass
    list_url = "fleet:nodeclass-list"

    def delete(self, obj: Any, request: HttpRequest) -> None:
        services.nodeclass_delete(nodeclass=obj, user=request.user, source="form")


def nodepool_export(request: HttpRequest, name: str) -> HttpResponse:
    pool = get_object_or_404(NodePool, name=name)
    return _yaml_response(services.karpenter_export([pool]), f"nodepool-{pool.name}.yaml")


def export_all(request: HttpRequest) -> HttpResponse:
    return _yaml_response(services.everything_export(), "karpenter.yaml")


# --- EC2NodeClasses ---------------------------------------------------------------------------------

def nodeclass_list(request: HttpRequest) -> HttpResponse:
    filterset = EC2NodeClassFilterSet(request.GET, queryset=EC2NodeClass.objects.all())
    rows = [(nc, list(selectors.nodepools_using(nodeclass=nc).values_list("name", flat=True))) for nc in filterset.qs]
    return render(request, "fleet/nodeclass_list.html", {"filter": filterset, "rows": rows})


def nodeclass_detail(request: HttpRequest, name: str) -> HttpResponse:
    nodeclass = get_object_or_404(EC2NodeClass, name=name)
    return render(request, "fleet/nodeclass_detail.html", {
        "nodeclass": nodeclass,
        "manifest": services.karpenter_export([nodeclass]),
        "pools": selectors.nodepools_using(nodeclass=nodeclass),
        "history": selectors.change_history(object_type=ChangeRecord.NODECLASS, name=nodeclass.name),
    })


class NodeClassEditView(View):
    template_name = "fleet/nodeclass_form.html"

    def get(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        nodeclass = get_object_or_404(EC2NodeClass, name=name) if name else None
        form = NodeClassForm(instance=nodeclass)
        return render(request, self.template_name, {"form": form, "nodeclass": nodeclass})

    def post(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        require_operator(request)
        nodeclass = get_object_or_404(EC2NodeClass, name=name) if name else None
        form = NodeClassForm(request.POST, instance=nodeclass)
        if form.is_valid():
            try:
                if nodeclass is None:
                    nodeclass = services.nodeclass_create(values=form.values(), user=request.user, source="form")
                    messages.success(request, f"EC2NodeClass {nodeclass.name} created.")
                else:
                    nodeclass = services.nodeclass_update(
                        nodeclass=nodeclass, values=form.values(), user=request.user, source="form",
                        expected_revision=form.cleaned_data.get("revision"))
                    messages.success(request, f"EC2NodeClass {nodeclass.name} saved.")
                return redirect(nodeclass)
            except services.StaleRevision as exc:
                form.add_error(None, exc)
            except ValidationError as exc:
                form.place_errors(exc)
            if nodeclass is not None and nodeclass.pk:
                nodeclass.refresh_from_db()
        return render(request, self.template_name,
                      {"form": form, "nodeclass": nodeclass if nodeclass and nodeclass.pk else None}, status=400)


def nodeclass_export(request: HttpRequest, name: str) -> HttpResponse:
    nodeclass = get_object_or_404(EC2NodeClass, name=name)
    return _yaml_response(services.karpenter_export([nodeclass]), f"ec2nodeclass-{nodeclass.name}.yaml")


# --- NodeClaims and decisions -----------------------------------------------------------------------

def nodeclaim_list(request: HttpRequest) -> HttpResponse:
    filterset = NodeClaimFilterSet(request.GET, queryset=NodeClaim.objects.all())
    return render(request, "fleet/nodeclaim_list.html", {
        "filter": filterset, "page": _page(request, filterset.qs),
        "pools": NodePool.objects.values_list("name", flat=True),
    })


def nodeclaim_detail(request: HttpRequest, name: str) -> HttpResponse:
    claim = get_object_or_404(NodeClaim, name=name)
    decisions = [d for d in Decision.objects.filter(nodepool_name=claim.nodepool_name)[:200]
                 if claim.name in (d.nodes or []) or claim.node_name in (d.nodes or [])][:20]
    return render(request, "fleet/nodeclaim_detail.html", {"claim": claim, "decisions": decisions})


def decision_list(request: HttpRequest) -> HttpResponse:
    filterset = DecisionFilterSet(request.GET, queryset=Decision.objects.all())
    # An invalid filter is shown at its field (400) and lists nothing, rather than being ignored.
    valid = filterset.is_valid()
    return render(request, "fleet/decision_list.html", {
        "filter": filterset, "page": _page(request, filterset.qs if valid else Decision.objects.none()),
        "pools": NodePool.objects.values_list("name", flat=True),
    }, status=200 if valid else 400)


def decision_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "fleet/decision_detail.html", {"decision": get_object_or_404(Decision, pk=pk)})


# --- Import -----------------------------------------------------------------------------------------

def import_yaml(request: HttpRequest) -> HttpResponse:
    require_operator(request)
    result = None
    status = 200
    convert_asked = request.GET.get("convert", "") in ("1", "true", "on")  # ?convert=1, as the API takes it
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                texts = form.sources(request.FILES.getlist("files"))
            except ValidationError as exc:
                form.add_error("files" if request.FILES else "text", exc)
            else:
                result = services.karpenter_import(texts=texts, user=request.user,
                                                   dry_run=form.cleaned_data["dry_run"],
                                                   convert=convert_asked or form.cleaned_data["convert"])
                if result.ok and result.conversion and not form.cleaned_data["dry_run"]:
                    # the conversion report is shown with the outcome, not lost in a redirect
                    messages.success(request, f"Converted and imported {len(result.created) + len(result.updated)} "
                                              f"object(s): {len(result.created)} created, {len(result.updated)} "
                                              f"updated, {len(result.unchanged)} unchanged.")
                    return render(request, "fleet/import.html", {"form": ImportForm(), "result": result,
                                                                 "imported": True})
                if result.ok and not form.cleaned_data["dry_run"]:
                    done = len(result.created) + len(result.updated)
                    messages.success(request, f"Imported {done} object(s): {len(result.created)} created, "
                                              f"{len(result.updated)} updated, {len(result.unchanged)} unchanged.")
                    return redirect(reverse("fleet:import") + "?done=1")
        if form.errors or (result and not result.ok):
            status = 400
    else:
        form = ImportForm(initial={"convert": convert_asked})
    return render(request, "fleet/import.html", {"form": form, "result": result}, status=status)


