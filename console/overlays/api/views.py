"""/api/nodeoverlays/: CRUD over NodeOverlays, looked up by name, writing through the services. A Django
ValidationError from the model (the CRD rules) is a 400 keyed by the field it names (console.service_api)."""

from __future__ import annotations

from typing import Any

from console.overlays import selectors, services
from console.overlays.api.serializers import NodeOverlaySerializer
from console.service_api import NamedObjectViewSet


class NodeOverlayViewSet(NamedObjectViewSet):
    serializer_class = NodeOverlaySerializer
    kind = "NodeOverlay"
    fields = NodeOverlaySerializer.Meta.fields[:7]

    @staticmethod
    def list_rows() -> Any:
        return selectors.overlay_list()

    @staticmethod
    def get_row(name: str) -> Any:
        return selectors.overlay_get(name=name)

    @staticmethod
    def create_row(values: dict[str, Any], user: Any) -> Any:
        return services.overlay_create(values=values, user=user, source="api")

    @staticmethod
    def update_row(row: Any, values: dict[str, Any], user: Any) -> Any:
        return services.overlay_update(overlay=row, values=values, user=user, source="api")

    @staticmethod
    def delete_row(row: Any, user: Any) -> Any:
        return services.overlay_delete(overlay=row, user=user, source="api")
