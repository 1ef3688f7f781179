"""What the API views of the objects kept by name share (NodeOverlays, Commitments, CapacityBuffers): the services'
errors as 400s keyed by the field they name, and a viewset that reads through selectors and writes through
services. No app is imported here; each app's viewset says which selectors and services it uses."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import Model
from django.http import Http404
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings


@contextmanager
def service_errors(duplicate: str) -> Iterator[None]:
    """A Django ValidationError from a service (the model's rules) as a DRF 400 keyed by the fields it names; a
    unique constraint broken as a 400 at `name` saying `duplicate`."""
    try:
        yield
    except DjangoValidationError as exc:
        errors: dict[str, list[str]] = {}
        for field, messages in exc.message_dict.items():
            errors.setdefault(api_settings.NON_FIELD_ERRORS_KEY if field == "__all__" else field, []).extend(messages)
        raise serializers.ValidationError(errors) from exc
    except IntegrityError as exc:
        raise serializers.ValidationError({"name": [duplicate]}) from exc


class NamedObjectViewSet(viewsets.ModelViewSet):  # type: ignore[type-arg]
    """CRUD over rows looked up by name. A subclass sets `kind` (for messages), `fields` (the model fields the API
    writes), and the reads and writes as static callables: `list_rows()`, `get_row(name)`, `create_row(values,
    user)`, `update_row(row, values, user)`, `delete_row(row, user)`."""

    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    kind: ClassVar[str] = ""
    fields: ClassVar[Sequence[str]] = ()

    @staticmethod
    def list_rows() -> Any:
        raise NotImplementedError

    @staticmethod
    def get_row(name: str) -> Any:
        raise NotImplementedError

    @staticmethod
    def create_row(values: dict[str, Any], user: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def update_row(row: Any, values: dict[str, Any], user: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def delete_row(row: Any, user: Any) -> Any:
        raise NotImplementedError

    def get_queryset(self) -> Any:
        return self.list_rows()

    def get_object(self) -> Model:
        row: Model | None = self.get_row(str(self.kwargs["name"]))
        if row is None:
            raise Http404(f"no such {self.kind}")
        self.check_object_permissions(self.request, row)
        return row

    def _values(self, data: dict[str, Any], base: Model | None = None) -> dict[str, Any]:
        values = {k: getattr(base, k) for k in self.fields} if base is not None else {}
        values.update({k: v for k, v in data.items() if k in self.fields})
        return values

    def _duplicate(self) -> str:
        return f"A {self.kind} with this name exists."

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with service_errors(self._duplicate()):
            row = self.create_row(self._values(dict(serializer.validated_data)), request.user)
        return Response(self.get_serializer(row).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = kwargs.pop("partial", False)
        row = self.get_object()
        serializer = self.get_serializer(row, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        with service_errors(self._duplicate()):
            row = self.update_row(row, self._values(dict(serializer.validated_data), row), request.user)
        return Response(self.get_serializer(row).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.delete_row(self.get_object(), request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
