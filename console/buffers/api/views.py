"""/api/capacitybuffers/: CRUD over CapacityBuffers, looked up by namespace/name, writing through the services.
A Django ValidationError from the model (the CRD's rules) is a 400 keyed by the field it names."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django.http import Http404
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from console.buffers import selectors, services
from console.buffers.api.serializers import CapacityBufferSerializer
from console.buffers.models import CapacityBuffer
from console.service_api import service_errors

FIELDS = CapacityBufferSerializer.Meta.fields[:10]


def _service_errors() -> AbstractContextManager[None]:
    return service_errors("A CapacityBuffer with this namespace and name exists.")


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

