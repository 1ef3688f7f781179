"""/api/commitments/: CRUD over Commitments, looked up by name, writing through the services. A Django
ValidationError from the model (the document's rules) is a 400 keyed by the field it names (console.service_api)."""

from __future__ import annotations

from typing import Any

from console.commitments import selectors, services
from console.commitments.api.serializers import CommitmentSerializer
from console.service_api import NamedObjectViewSet


class CommitmentViewSet(NamedObjectViewSet):
    serializer_class = CommitmentSerializer
    kind = "Commitment"
    fields = CommitmentSerializer.Meta.fields[:12]

    @staticmethod
    def list_rows() -> Any:
        return selectors.commitment_list()

    @staticmethod
    def get_row(name: str) -> Any:
        return selectors.commitment_get(name=name)

    @staticmethod
    def create_row(values: dict[str, Any], user: Any) -> Any:
        return services.commitment_create(values=values, user=user, source="api")

    @staticmethod
    def update_row(row: Any, values: dict[str, Any], user: Any) -> Any:
        return services.commitment_update(commitment=row, values=values, user=user, source="api")

    @staticmethod
    def delete_row(row: Any, user: Any) -> Any:
        return services.commitment_delete(commitment=row, user=user, source="api")
