"""GET /api/advisor/: the advisor's findings, the JSON of `python -m packing advise`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import RolePermission
from console.advisor import selectors


class AdvisorView(APIView):
    permission_classes = [RolePermission]

    @extend_schema(
        summary="Advisor findings",
        description=(
            'Karpenter\'s classic mistakes in the live cluster and the saved fleet: {"findings": [{"code", '
            '"severity", "title", "objects", "evidence", "monthly_savings", "fix": {"kind", "name", "patch", '
            '"diff"}}], "summary": {...}}, as `python -m packing advise` prints it (docs/advisor.md).'
        ),
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.advice_document(selectors.current_advice()))
