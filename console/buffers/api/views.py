"""/api/capacitybuffers/: CRUD over CapacityBuffers, looked up by namespace/name, writing through the services.
A Django ValidationError from the model (the CRD's rules) is a 400 keyed by the field it names."""

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

from console.buffers import selectors, services
from console.buffers.api.serializers import CapacityBufferSerializer
from console.buffers.models import CapacityBuffer

FIELDS = CapacityBufferSerializer.Meta.fields[:10]


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
        raise serializers.ValidationError({"name": ["A CapacityBuffer with this namespace and name exists."]}) from exc


class CapacityBufferViewSet(viewsets.ModelViewSet):
    serializer_class = CapacityBufferSerializer
    lookup_field = "key"
    lookup_value_regex = r"[^/]+/[^/]+"

    def get_queryset(self) -> Any:
        return selectors.buffer_list()

    def get_object(self) -> CapacityBuffer:
        namespace, _, name = str(self.kwargs["key"]).partition("/")
        buffer = selectors.buffer_get(namespace=namespace, name=name)
        if buffer is None:
            raise Http404("no such CapacityBuffer")
        self.check_object_permissions(self.request, buffer)
        return buffer

    def _values(self, data: dict[str, Any], base: CapacityBuffer | None = None) -> dict[str, Any]:
        values = {k: getattr(base, k) for k in FIELDS} if base is not None else {}
        values.update({k: v for k, v in data.items() if k in FIELDS})
        return values

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with _service_errors():
            buffer = services.buffer_create(values=self._values(dict(serializer.validated_data)),
                                           user=request.user, source="api")
        return Response(self.get_serializer(buffer).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = kwargs.pop("partial", False)
        buffer = self.get_object()
        serializer = self.get_serializer(buffer, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        with _service_errors():
            buffer = services.buffer_update(buffer=buffer, values=self._values(dict(serializer.validated_data), buffer),
                                            user=request.user, source="api")
        return Response(self.get_serializer(buffer).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.buffer_delete(buffer=self.get_object(), user=request.user, source="api")
        return Response(status=status.HTTP_204_NO_CONTENT)

