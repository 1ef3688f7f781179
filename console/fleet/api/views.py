"""The REST API: thin views over the services (writes) and selectors (reads).

Views parse and check the shape of the input with serializers, call one service, and turn the
service's exceptions into HTTP answers: a Django ValidationError becomes 400 keyed by field,
StaleRevision and NodeClassInUse become 409. No business rule lives here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import HttpResponse
from django.templatetags.static import static
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from drf_spectacular.views import SpectacularSwaggerView
from rest_framework import exceptions, parsers, renderers, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.utils import encoders
from rest_framework.views import APIView

from console.buffers import selectors as buffer_selectors
from console.fleet import selectors, services
from console.fleet.api.serializers import (
    ChangeRecordSerializer,
    DecisionSerializer,
    EC2NodeClassSerializer,
    FleetObjectSerializer,
    ImportErrorSerializer,
    ImportRequestSerializer,
    ImportResultSerializer,
    NodeClaimSerializer,
    NodePoolSerializer,
)
from console.fleet.filters import (
    DecisionFilterSet,
    EC2NodeClassFilterSet,
    NodeClaimFilterSet,
    NodePoolFilterSet,
)
from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool

# Kubernetes object names: DNS subdomains, so dots are allowed (no format suffixes in the URLs).
NAME_REGEX = r"[^/]+"
YAML_MEDIA_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain")


class Pagination(PageNumberPagination):
    """PAGE_SIZE from settings; clients may ask for up to 500 rows a page with ?page_size=."""

    page_size_query_param = "page_size"
    max_page_size = 500


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state of the object."
    default_code = "conflict"


def _drf_errors(exc: DjangoValidationError) -> dict[str, list[str]] | list[str]:
    if not hasattr(exc, "error_dict"):
        return {api_settings.NON_FIELD_ERRORS_KEY: list(exc.messages)}
    errors: dict[str, list[str]] = {}
    for field_name, messages in exc.message_dict.items():
        key = api_settings.NON_FIELD_ERRORS_KEY if field_name == "__all__" else field_name
        errors.setdefault(key, []).extend(messages)
    return errors


@contextmanager
def service_errors() -> Iterator[None]:
    """Translate what a service raises into the API's answers."""
    try:
        yield
    except (services.StaleRevision, services.NodeClassInUse) as exc:
        raise Conflict(" ".join(exc.messages)) from exc
    except DjangoValidationError as exc:
        raise serializers.ValidationError(_drf_errors(exc)) from exc
    except IntegrityError as exc:
        # Two clients creating the same name at once: the loser gets what validation would have said.
        raise serializers.ValidationError({"name": ["An object with this name already exists."]}) from exc


class YamlRenderer(renderers.BaseRenderer):
    media_type = "text/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        if not isinstance(data, str):
            # Error answers hold DRF's ErrorDetail (a str subclass the safe dumper refuses): plain
            # JSON types first, so a 401/403/404 in YAML is a YAML document, not a 500.
            data = json.loads(json.dumps(data, cls=encoders.JSONEncoder))
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        return text.encode(self.charset)


class _YamlTextParser(parsers.BaseParser):
    """A request body of YAML text, handed over as one string (the importer parses it)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> str:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        raw = stream.read() if stream is not None else b""
        try:
            return raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise exceptions.ParseError(f"The YAML body is not valid {encoding} text.") from exc


def _yaml_parser(media: str) -> type[parsers.BaseParser]:
    return type(f"YamlTextParser[{media}]", (_YamlTextParser,), {"media_type": media})


YAML_PARSERS = [_yaml_parser(media) for media in YAML_MEDIA_TYPES]


class FleetObjectViewSet(viewsets.ModelViewSet):
    """CRUD for NodePools and EC2NodeClasses, looked up by name, writing through the services."""

    lookup_field = "name"
    lookup_value_regex = NAME_REGEX
    pagination_class = Pagination
    history_type: str = ""
    serializer_class: type[FleetObjectSerializer]

    # --- the service calls, one per subclass ------------------------------------------------------
    def create_object(self, values: dict[str, Any]) -> Any:
        raise NotImplementedError

    def update_object(self, obj: Any, values: dict[str, Any], expected_revision: int | None) -> Any:
        raise NotImplementedError

    def delete_object(self, obj: Any) -> None:
        raise NotImplementedError

    # --- HTTP -------------------------------------------------------------------------------------
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values, _ = serializer.service_values(replace=True)
        with service_errors():
            obj = self.create_object(values)
        return Response(self.get_serializer(obj).data, status=status.HTTP_201_CREATED,
                        headers={"Location": request.build_absolute_uri(f"{obj.name}/")})

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = kwargs.pop("partial", False)
        obj = self.get_object()
        serializer = self.get_serializer(obj, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        # PUT replaces the whole object (absent fields go back to their defaults); PATCH changes
        # only the fields it names.
        values, expected_revision = serializer.service_values(replace=not partial)
        with service_errors():
            obj = self.update_object(obj, values, expected_revision)
        return Response(self.get_serializer(obj).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        obj = self.get_object()
        with service_errors():
            self.delete_object(obj)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Change history",
        description="Every change to this object, newest first: who, when, from where (form, api, "
                    "import…) and what changed, field by field in Karpenter YAML paths. Still "
                    "readable after the object is deleted.",
        responses=ChangeRecordSerializer(many=True),
        filters=False,
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def history(self, request: Request, name: str | None = None) -> Response:
        records = ChangeRecord.objects.filter(object_type=self.history_type, object_name=name).select_related("user")
        if not records.exists() and not self.get_queryset().filter(name=name).exists():
            raise exceptions.NotFound()
        page = self.paginate_queryset(records)
        return self.get_paginated_response(ChangeRecordSerializer(page, many=True).data)

    @extend_schema(
        summary="Export as Karpenter YAML",
        description="The object as a Karpenter v1 manifest that `kubectl apply` accepts and that "
                    "imports back (POST /api/import/) to the same object.",
        responses={(200, "text/yaml"): OpenApiTypes.STR},
        filters=False,
    )
    @action(detail=True, methods=["get"], filter_backends=[],
            renderer_classes=[renderers.JSONRenderer, YamlRenderer])
    def export(self, request: Request, name: str | None = None) -> HttpResponse:
        obj = self.get_object()
        return HttpResponse(services.karpenter_export([obj]), content_type="text/yaml; charset=utf-8")


_REVISION_CONFLICT = OpenApiResponse(description="The revision sent is stale: someone else changed the object.")


@extend_schema_view(
    list=extend_schema(summary="List NodePools", description="With each pool's current usage against its limits."),
    create=extend_schema(summary="Create a NodePool",
                         description="Absent fields get Karpenter's defaults (as the API server would)."),
    update=extend_schema(summary="Replace a NodePool",
                         description="Absent fields go back to their defaults. Send `revision` to refuse "
                                     "a stale overwrite.",
                         responses={200: NodePoolSerializer, 409: _REVISION_CONFLICT}),
    partial_update=extend_schema(summary="Change some fields of a NodePool",
                                 responses={200: NodePoolSerializer, 409: _REVISION_CONFLICT}),
)
class NodePoolViewSet(FleetObjectViewSet):
    """karpenter.sh/v1 NodePools, by name. Writes need the operator role and are recorded in the history."""

    queryset = NodePool.objects.all()
    serializer_class = NodePoolSerializer
    filterset_class = NodePoolFilterSet
    history_type = ChangeRecord.NODEPOOL

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        rows = list(page if page is not None else queryset)
        # One query for the usage of the whole page, not one per pool.
        usage = {u.nodepool.pk: u for u in selectors.nodepool_list(queryset=NodePool.objects.filter(
            pk__in=[p.pk for p in rows]))}
        context = {**self.get_serializer_context(), "usage": usage}
        data = NodePoolSerializer(rows, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    def create_object(self, values: dict[str, Any]) -> NodePool:
        return services.nodepool_create(values=values, user=self.request.user, source="api")

    def update_object(self, obj: NodePool, values: dict[str, Any], expected_revision: int | None) -> NodePool:
        return services.nodepool_update(nodepool=obj, values=values, user=self.request.user, source="api",
                                        expected_revision=expected_revision)

    def delete_object(self, obj: NodePool) -> None:
        services.nodepool_delete(nodepool=obj, user=self.request.user, source="api")


@extend_schema_view(
    list=extend_schema(summary="List EC2NodeClasses"),
    create=extend_schema(summary="Create an EC2NodeClass"),
    update=extend_schema(summary="Replace an EC2NodeClass",
                         responses={200: EC2NodeClassSerializer, 409: _REVISION_CONFLICT}),
    partial_update=extend_schema(summary="Change some fields of an EC2NodeClass",
                                 responses={200: EC2NodeClassSerializer, 409: _REVISION_CONFLICT}),
    destroy=extend_schema(summary="Delete an EC2NodeClass",
                          description="Refused (409) while a NodePool references it, as Karpenter's finalizer does.",
                          responses={204: None, 409: OpenApiResponse(description="Still referenced by NodePools.")}),
)
class EC2NodeClassViewSet(FleetObjectViewSet):
    """karpenter.k8s.aws/v1 EC2NodeClasses, by name. Writes need the operator role and are recorded."""

    queryset = EC2NodeClass.objects.all()
    serializer_class = EC2NodeClassSerializer
    filterset_class = EC2NodeClassFilterSet
    history_type = ChangeRecord.NODECLASS

    def create_object(self, values: dict[str, Any]) -> EC2NodeClass:
        return services.nodeclass_create(values=values, user=self.request.user, source="api")

    def update_object(self, obj: EC2NodeClass, values: dict[str, Any],
                      expected_revision: int | None) -> EC2NodeClass:
        return services.nodeclass_update(nodeclass=obj, values=values, user=self.request.user, source="api",
                                         expected_revision=expected_revision)

    def delete_object(self, obj: EC2NodeClass) -> None:
        services.nodeclass_delete(nodeclass=obj, user=self.request.user, source="api")


class NodeClaimViewSet(viewsets.ReadOnlyModelViewSet):
    """The nodes Loadmaster launched, newest first, with their lifecycle (read-only)."""

    queryset = NodeClaim.objects.all()
    serializer_class = NodeClaimSerializer
    filterset_class = NodeClaimFilterSet
    lookup_field = "name"
    lookup_value_regex = NAME_REGEX
    pagination_class = Pagination


class DecisionViewSet(viewsets.ReadOnlyModelViewSet):
    """The decision ledger: every launch, disruption and unschedulable verdict, with its why (read-only)."""

    queryset = Decision.objects.all()
    serializer_class = DecisionSerializer
    filterset_class = DecisionFilterSet
    pagination_class = Pagination


class BufferHistoryView(APIView):
    """/api/capacitybuffers/<namespace>/<name>/history/: a CapacityBuffer's change history (console/buffers)."""

    @extend_schema(
        summary="CapacityBuffer change history",
        description="Every change to this CapacityBuffer, newest first: who, when, from where (form, api, import) "
                    "and what changed, field by field in its manifest's paths. Still readable after the buffer is "
                    "deleted.",
        responses=ChangeRecordSerializer(many=True),
    )
    def get(self, request: Request, namespace: str, name: str) -> Response:
        key = f"{namespace}/{name}"
        records = ChangeRecord.objects.filter(object_type=ChangeRecord.CAPACITYBUFFER,
                                              object_name=key).select_related("user")
        if not records.exists() and buffer_selectors.buffer_get(namespace=namespace, name=name) is None:
            raise exceptions.NotFound()
        paginator = Pagination()
        page = paginator.paginate_queryset(records, request, view=self)
        return paginator.get_paginated_response(ChangeRecordSerializer(page, many=True).data)


class ImportView(APIView):
    """Karpenter YAML in: all or nothing, like the import page."""

    parser_classes = [parsers.JSONParser, *YAML_PARSERS, parsers.MultiPartParser, parsers.FormParser]

    @extend_schema(
        summary="Import Karpenter YAML",
        description=(
            "karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 EC2NodeClass documents, several per "
            "body if you like: as the raw request body (Content-Type text/yaml or application/yaml), "
            'as JSON {"yaml": "..."}, or as multipart file upload(s). Existing objects with the same '
            "name are updated, as `kubectl apply` does. All or nothing: if any document has a problem, "
            "nothing is saved and every problem is listed (400). With `?dry_run=1` the documents are "
            "only checked."
        ),
        parameters=[OpenApiParameter("dry_run", OpenApiTypes.BOOL, description="Check only; save nothing."),
                    OpenApiParameter("convert", OpenApiTypes.BOOL,
                                     description="Convert legacy Karpenter objects (v1alpha5 Provisioner, v1alpha1 "
                                                 "AWSNodeTemplate, v1beta1 NodePool and EC2NodeClass) to v1 first; "
                                                 "the answer's `conversion` lists what moved, changed, was "
                                                 "defaulted or dropped. Without it they are refused.")],
        request={
            "application/json": ImportRequestSerializer,
            "text/yaml": OpenApiTypes.STR,
            "application/yaml": OpenApiTypes.STR,
            "multipart/form-data": {"type": "object", "properties": {
                "file": {"type": "array", "items": {"type": "string", "format": "binary"}}}},
        },
        responses={200: ImportResultSerializer, 400: ImportErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        texts, dry_run = self._texts(request)
        convert = self._flag(request, "convert")
        with service_errors():
            result = services.karpenter_import(texts=texts, user=request.user, dry_run=dry_run, convert=convert)
        if result.problems:
            problems = [{"document": p.document, "path": p.path, "message": p.message, "source": p.source}
                        for p in result.problems]
            return Response({"detail": f"Nothing was imported: {len(problems)} problem(s) found.",
                             "problems": problems}, status=status.HTTP_400_BAD_REQUEST)
        body: dict[str, Any] = {"dry_run": dry_run, "created": result.created, "updated": result.updated,
                                "unchanged": result.unchanged}
        if convert:  # the conversion report, only when one was asked for
            body["conversion"] = result.conversion
        return Response(body)

    @staticmethod
    def _flag(request: Request, name: str) -> bool:
        if name not in request.query_params:
            return False
        try:
            return bool(serializers.BooleanField().to_internal_value(request.query_params[name]))
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({name: exc.detail}) from exc

    def _texts(self, request: Request) -> tuple[list[tuple[str, str]], bool]:
        dry_run = False
        if "dry_run" in request.query_params:
            try:
                dry_run = serializers.BooleanField().to_internal_value(request.query_params["dry_run"])
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"dry_run": exc.detail}) from exc
        data = request.data
        if isinstance(data, str):
            return [("", data)], dry_run
        texts: list[tuple[str, str]] = []
        for upload in request.FILES.getlist("file") if request.FILES else []:
            try:
                texts.append((upload.name or "", upload.read().decode("utf-8")))
            except UnicodeDecodeError as exc:
                raise serializers.ValidationError({"file": [f"{upload.name} is not UTF-8 text."]}) from exc
        if texts:
            return texts, dry_run
        body = ImportRequestSerializer(data=data)
        body.is_valid(raise_exception=True)
        return [("", body.validated_data["yaml"])], dry_run or body.validated_data["dry_run"]


class DocsView(SpectacularSwaggerView):
    """Swagger UI from the drf-spectacular-sidecar static files: no CDN, works offline."""

    url_name = "api:schema"

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"drf_spectacular_sidecar/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static("drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png")
