"""/api/replays/: list and start replays, read one (its status and, when done, the JSON `python -m packing replay`
prints), cancel one. Viewers read; operators start and cancel (console.access.RolePermission)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.history.models import HistoryImport
from console.replay import selectors, services
from console.replay.models import Replay


class ReplayStartSerializer(serializers.Serializer[Any]):
    """The body of POST /api/replays/: every key optional (the window defaults to the history's last 7 days)."""

    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**31 - 1)
    change = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                   help_text="NodePools / EC2NodeClasses as YAML (several documents)")

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # "from", "to" and "import" are Python keywords: added under the names the CLI and the result use
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(required=False)
        fields["to"] = serializers.DateTimeField(required=False)
        fields["import"] = serializers.PrimaryKeyRelatedField(queryset=HistoryImport.objects.all(), required=False,
                                                              allow_null=True, default=None)
        return fields


class ReplayListView(APIView):
    @extend_schema(summary="The replays", description="The latest replays, newest first, without their results.",
                   operation_id="replays_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response({"results": [selectors.replay_json(run=r, with_result=False)
                                     for r in selectors.replay_list(limit=100)]})

    @extend_schema(summary="Start a replay", request=ReplayStartSerializer,
                   description="Queue a replay of [from, to) of the recorded history (or of `import`) with the "
                               "configuration in force and with `change`. 201 with the replay; 400 naming the field "
                               "(nothing saved) on bad input.",
                   operation_id="replays_create", responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        body = ReplayStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        start, end = data.get("from"), data.get("to")
        if start is None or end is None:
            default_start, default_end = selectors.default_window(imported=data["import"])
            start, end = start or default_start, end or default_end
        try:
            run = services.replay_start(start=start, end=end, seed=data["seed"], change_yaml=data["change"],
                                        imported=data["import"], user=request.user)
        except ValidationError as e:
            return Response({("to" if k == "end" else k): v for k, v in e.message_dict.items()},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response(selectors.replay_json(run=run), status=status.HTTP_201_CREATED)


class ReplayDetailView(APIView):
    @extend_schema(summary="A replay", description="Its status and progress and, once done, `result`: the JSON "
                                                   "document of `python -m packing replay` (docs/whatif.md).",
                   operation_id="replays_retrieve", responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request: Request, pk: int) -> Response:
        run = selectors.replay_get(pk=pk)
        if run is None:
            return Response({"detail": "No such replay."}, status=status.HTTP_404_NOT_FOUND)
        return Response(selectors.replay_json(run=run))


class ReplayCancelView(APIView):
    @extend_schema(summary="Cancel a replay", request=None,
                   description="A queued replay is cancelled at once, a running one stops at its next progress "
                               "report; a finished one is left as it is.",
                   operation_id="replays_cancel", responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, pk: int) -> Response:
        run = services.replay_cancel(run=get_object_or_404(Replay, pk=pk))
        return Response(selectors.replay_json(run=run, with_result=False))
