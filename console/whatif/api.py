"""REST endpoints: POST /api/whatif/ (preview an edit), GET /api/pods/<ns>/<name>/why, GET /api/nodes/<name>/why.

All three are read-only — the preview computes and saves nothing — so any signed-in user (viewer
included) may call them.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.backends.factory import cluster_backend
from console.fleet.models import EC2NodeClass, NodePool
from console.whatif import selectors


class PreviewRequest(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["nodepool", "nodeclass"], default="nodepool")
    name = serializers.CharField(required=False, allow_blank=True, default="",
                                 help_text="The saved object being edited; empty for a new one.")
    values = serializers.DictField(help_text="Model field values (as /api/nodepools/ uses), the edit to preview; "
                                             "absent fields keep the saved object's values.")


_PLAN_SIDE = inline_serializer("WhatIfSide", fields={
    "launch": serializers.ListField(child=serializers.DictField(), help_text="NodeClaims for pending pods."),
    "replacements": serializers.ListField(child=serializers.DictField(),
                                          help_text="NodeClaims disruption launches, each with the nodes it "
                                                    "replaces and the reason (drifted, underutilized, …)."),
    "remove": serializers.ListField(child=serializers.CharField(), help_text="Names of the nodes removed."),
    "removals": serializers.ListField(child=serializers.DictField(),
                                      help_text="Each removed node with its action type, reason, why and "
                                                "replacements."),
    "held_back": serializers.ListField(child=serializers.DictField(),
                                       help_text="Nodes a disruption budget holds back for a later round."),
    "cost_per_hour_existing": serializers.FloatField(),
    "cost_per_hour_launch": serializers.FloatField(),
    "cost_per_hour_replacements": serializers.FloatField(),
    "cost_per_hour_consolidation_savings": serializers.FloatField(help_text="Σ of the actions' savings; "
                                                                            "negative when they cost more."),
    "cost_per_hour_disruption_change": serializers.FloatField(help_text="Signed: what disruption adds to the "
                                                                        "fleet's cost (−savings)."),
    "cost_per_hour_after": serializers.FloatField(),
    "lower_bound_per_hour": serializers.FloatField(allow_null=True),
    "distance_from_lower_bound": serializers.FloatField(allow_null=True),
    "unschedulable": serializers.DictField(),
    "seconds": serializers.FloatField(),
})

PREVIEW_RESPONSE = inline_serializer("WhatIfPreview", fields={
    "kind": serializers.CharField(), "name": serializers.CharField(),
    "before": _PLAN_SIDE, "after": _PLAN_SIDE,
    "deltas": serializers.DictField(help_text="after − before, signed: the cost figures ($/h) and, as "
                                              "<list>_count, the number of launches, replacements, removals, "
                                              "held-back nodes and unschedulable pods."),
    "becomes_unschedulable": serializers.ListField(child=serializers.DictField()),
    "becomes_schedulable": serializers.ListField(child=serializers.DictField()),
    "cost_per_hour_delta": serializers.FloatField(),
})

POD_WHY_RESPONSE = inline_serializer("PodWhy", fields={
    "pod": serializers.CharField(), "pending": serializers.BooleanField(),
    "schedulable": serializers.BooleanField(required=False),
    "requests": serializers.DictField(child=serializers.CharField(), required=False,
                                      help_text="The pod's requests as Kubernetes quantities."),
    "pools": inline_serializer("PodWhyPool", many=True, fields={
        "nodepool": serializers.CharField(), "reason": serializers.CharField(),
        "suggestion": serializers.CharField(allow_null=True), "verified": serializers.BooleanField(),
        "change_kind": serializers.ChoiceField(choices=list(selectors.CHANGE_KINDS), allow_null=True),
        "change": serializers.CharField(allow_null=True, help_text="What kind of change the suggestion is."),
        "cost_per_hour": serializers.FloatField(allow_null=True, help_text="What the change adds to this "
                                                                          "provisioning run's launches, $/h."),
        "recommended": serializers.BooleanField(help_text="The smallest, then cheapest, change: rows are "
                                                          "ordered by it.")}),
})

NODE_WHY_RESPONSE = inline_serializer("NodeWhy", fields={
    "node": serializers.CharField(), "candidate": serializers.BooleanField(),
    "blocked_by": serializers.CharField(allow_null=True),
    "blocked_kind": serializers.ChoiceField(choices=["pdb", "do-not-disrupt", "budget"], allow_null=True),
    "savings_per_hour": serializers.FloatField(allow_null=True),
    "action": serializers.DictField(allow_null=True), "cheapest_replacement": serializers.DictField(allow_null=True),
    "nodepool_deleted": serializers.BooleanField(required=False, help_text="Its NodePool was deleted: the node "
                                                                           "is being drained and terminated."),
    "nodepool": serializers.CharField(required=False), "claim": serializers.CharField(required=False),
    "health": serializers.DictField(help_text="Node repair's view: conditions, matched repair policies, when "
                                              "repair is due and the NodePool's 20% gate."),
})


class PreviewView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Preview a NodePool or EC2NodeClass edit (saves nothing)",
        description="Runs provisioning and consolidation on the current cluster state with the edited object in "
                    "place of the saved one; returns before/after launches, removals, cost per hour, pods that "
                    "become (un)schedulable and the distance from the lower bound.",
        request=PreviewRequest, responses={200: PREVIEW_RESPONSE, 400: OpenApiResponse(description="invalid values")},
        examples=[OpenApiExample("raise a limit", request_only=True,
                                 value={"kind": "nodepool", "name": "default", "values": {"limits": {"cpu": "200"}}})],
    )
    def post(self, request: Request) -> Response:
        body = PreviewRequest(data=request.data)
        body.is_valid(raise_exception=True)
        kind, name, values = body.validated_data["kind"], body.validated_data["name"], body.validated_data["values"]
        model: type[NodePool] | type[EC2NodeClass] = NodePool if kind == "nodepool" else EC2NodeClass
        saved = model.objects.filter(name=name).first() if name else None
        if name and saved is None:
            raise NotFound(f"{kind} {name} not found")
        fields = {f.name for f in model._meta.concrete_fields}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValidationError({"values": [f"unknown field {k}" for k in unknown]})
        merged = {**(saved.field_values() if saved else {"name": values.get("name", "")}), **values}
        # What saving runs: the model's full_clean(), whose clean() is console/fleet/validation.py.
        try:
            selectors.edited_instance(model, merged, saved).full_clean(validate_unique=False)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"values": exc.messages}) from None
        result = selectors.preview_nodepool_change(values=merged, name=name or None, kind=kind, cluster=cluster_backend())
        return Response(result, status=status.HTTP_200_OK)


class PodWhyView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Why is this pod pending?",
                   description="For each NodePool the constraint that rules the pod out, and the smallest change "
                               "(verified by re-running the engine) that would let it schedule.",
                   responses={200: POD_WHY_RESPONSE, 404: OpenApiResponse(description="no such pod")})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        return Response(_or_404(selectors.why_pending, namespace, name, cluster=cluster_backend()))


class NodeWhyView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="Why is this node still here?",
                   description="Whether the node is a consolidation candidate now, what blocks it (PDB, "
                               "do-not-disrupt, budget window, consolidateAfter, no cheaper replacement) and what "
                               "the move would save.",
                   responses={200: NODE_WHY_RESPONSE, 404: OpenApiResponse(description="no such node")})
    def get(self, request: Request, name: str) -> Response:
        cluster = cluster_backend()
        answer = _or_404(selectors.why_node, name, cluster=cluster)
        return Response({**answer, "health": selectors.node_health(name, cluster=cluster)})


def _or_404(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except selectors.NotFound as exc:
        raise NotFound(str(exc)) from None
