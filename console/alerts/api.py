"""The alerts API: viewsets over channels and rules; every write goes through the services."""

from __future__ import annotations

from typing import Any

from rest_framework import routers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from console.access import RolePermission
from console.alerts import services
from console.alerts.models import AlertRule, Channel
from console.alerts.serializers import ChannelSerializer, RuleSerializer


class ChannelViewSet(viewsets.ModelViewSet):
    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer
    permission_classes = [RolePermission]

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            services.channel_delete(channel=self.get_object())
        except services.ChannelInUse:
            return Response({"detail": "This channel is used by alert rules; move or delete them first."},
                            status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RuleViewSet(viewsets.ModelViewSet):
    queryset = AlertRule.objects.select_related("channel")
    serializer_class = RuleSerializer
    permission_classes = [RolePermission]

    def perform_destroy(self, instance: AlertRule) -> None:
        services.rule_delete(rule=instance)


router = routers.DefaultRouter()
router.register("channels", ChannelViewSet, basename="alert-channel")
router.register("rules", RuleViewSet, basename="alert-rule")
urlpatterns = router.urls
