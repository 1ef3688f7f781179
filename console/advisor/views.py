"""/advisor/: the findings with severity, evidence, dollars and the fix's diff; a button per NodePool fix that
opens the NodePool form with the fix filled in (saved only when the operator saves it, previewable like any
edit); and the IAM preflight (operators only)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from console.access import require_operator
from console.advisor import selectors, services
from console.fleet.forms import NodePoolEditor
from console.fleet.models import NodePool
from console.fleet.views import NodePoolEditView
from packing import api


def _rows(advice: api.Advice) -> list[dict[str, object]]:
    pools = set(NodePool.objects.values_list("name", flat=True))
    return [{"finding": f, "evidence": sorted(f.evidence.items()),
             "editable": f.fix is not None and f.fix.kind == "NodePool" and f.fix.name in pools}
            for f in advice.findings]


def advisor_index(request: HttpRequest, *, preflight: services.Preflight | None = None) -> HttpResponse:
    advice = selectors.current_advice()
    return render(request, "advisor/index.html", {
        "rows": _rows(advice), "summary": advice.summary(), "preflight": preflight,
    })


@require_POST
def iam_preflight(request: HttpRequest) -> HttpResponse:
    require_operator(request)
    return advisor_index(request, preflight=services.iam_preflight_run())


class FixFormView(NodePoolEditView):
    """The NodePool form of the pool a finding's fix patches, filled in with the fix. Posting it is the
    ordinary NodePool edit (validation, revision check, change record): nothing is saved before."""

    def get(self, request: HttpRequest, name: str | None = None, code: str = "") -> HttpResponse:
        require_operator(request)
        pool = get_object_or_404(NodePool, name=name)
        finding = selectors.finding_for(selectors.current_advice(), code=code, kind="NodePool", name=pool.name)
        if finding is None or finding.fix is None:
            raise Http404("No such finding on this NodePool (it may have been fixed since).")
        fixed, problems = selectors.nodepool_with_fix(nodepool=pool, patch=finding.fix.patch)
        editor = NodePoolEditor(instance=fixed)
        for path, message in problems:
            editor.form.add_error(None, f"{path}: {message}")
        response = self._render(request, editor, pool)
        return response

    def post(self, request: HttpRequest, name: str | None = None, code: str = "") -> HttpResponse:
        return super().post(request, name)
