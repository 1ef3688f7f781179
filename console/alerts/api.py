from __future__ import annotations

from typing import Any

from django.db.models.deletion import ProtectedError
from rest_framework import routers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from console.access import RolePermission
from console.alerts.models import AlertRule, Channel
from console.alerts.serializers import ChannelSerializer, RuleSerializer


class ChannelViewSet(viewsets.ModelViewSet):
    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer
    permission_classes = [RolePermission]

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            return super().destroy(request, *args, **kwargs)
        except ProtectedError:
            return Response({"detail": "This channel is used by alert rules; move or delete them first."},
                            status=status.HTTP_409_CONFLICT)


class RuleViewSet(viewsets.ModelViewSet):
    queryset = AlertRule.objects.select_related("channel")
    serializer_class = RuleSerializer
    permission_classes = [RolePermission]


router = routers.DefaultRouter()
router.register("channels", ChannelViewSet, basename="alert-channel")
router.register("rules", RuleViewSet, basename="alert-rule")
urlpatterns = router.urls
