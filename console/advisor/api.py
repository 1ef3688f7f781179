"""GET /api/advisor/: the advisor's findings, the JSON of `python -m packing advise`."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import RolePermission
from console.advisor import selectors


class AdvisorView(APIView):
    permission_classes = [RolePermission]

    def get(self, request: Request) -> Response:
        return Response(selectors.advice_document(selectors.current_advice()))
