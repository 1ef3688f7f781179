"""/api/commitments/: CRUD over Commitments, looked up by name, writing through the services. A Django
ValidationError from the model (the document's rules) is a 400 keyed by the field it names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import Http404
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from console.commitments import selectors, services
from console.commitments.api.serializers import CommitmentSerializer
from console.commitments.models import Commitment

FIELDS = CommitmentSerializer.Meta.fields[:12]


@contextmanager
def _service_errors() -> Iterator[None]:
    try:
        yield
    except DjangoValidationError as exc:
        errors: dict[str, list[str]] = {}
        for field, messages in exc.message_dict.items():
            errors.setdefault(api_settings.NON_FIELD_ERRORS_KEY if field == "__all__" else field, []).extend(messages)
        raise serializers.ValidationError(errors) from exc
    except IntegrityError as exc:
        raise serializers.ValidationError({"name": ["A Commitment with this name exists."]}) from exc


class CommitmentViewSet(viewsets.ModelViewSet):
    serializer_class = CommitmentSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"

    def get_queryset(self) -> Any:
        return selectors.commitment_list()

    def get_object(self) -> Commitment:
        row = selectors.commitment_get(name=str(self.kwargs["name"]))
        if row is None:
            raise Http404("no such Commitment")
        self.check_object_permissions(self.request, row)
        return row

    def _values(self, data: dict[str, Any], base: Commitment | None = None) -> dict[str, Any]:
        values = {k: getattr(base, k) for k in FIELDS} if base is not None else {}
        values.update({k: v for k, v in data.items() if k in FIELDS})
        return values

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with _service_errors():
            row = services.commitment_create(values=self._values(dict(serializer.validated_data)), user=request.user,
                                               source="api")
        return Response(self.get_serializer(row).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = kwargs.pop("partial", False)
        row = self.get_object()
        serializer = self.get_serializer(row, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        with _service_errors():
            row = services.commitment_update(commitment=row, values=self._values(dict(serializer.validated_data), row),
                                             user=request.user, source="api")
        return Response(self.get_serializer(row).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.commitment_delete(commitment=self.get_object(), user=request.user, source="api")
        return Response(status=status.HTTP_204_NO_CONTENT)
