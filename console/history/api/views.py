"""/api/history/: the recorded history as a JSON-lines file (GET, viewers may read) and the import of one
(POST, operators; all or nothing). Thin: the selector streams, the service imports."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.history import selectors, services

MEDIA_TYPE = "application/x-ndjson"


class _LinesParser(parsers.BaseParser):
    """The body as bytes: a history file is read line by line by the service, never as one JSON document."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> bytes:
        return bytes(stream.read()) if stream is not None else b""


def _parser(media: str) -> type[parsers.BaseParser]:
    return type(f"LinesParser_{media.replace('/', '_').replace('-', '_')}", (_LinesParser,), {"media_type": media})


LINE_PARSERS = [_parser(m) for m in (MEDIA_TYPE, "application/jsonl", "text/plain", "application/octet-stream")]


def _time_param(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        t = datetime.fromisoformat(raw.strip().replace(" ", "+"))  # a "+" in a query string arrives as a space
        t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    except (ValueError, OverflowError):
        raise serializers.ValidationError(
            {name: [f"{raw[:40]!r} is not an RFC 3339 time such as 2026-12-03T09:40:00Z."]}) from None
    return t


class HistoryView(APIView):
    parser_classes = [*LINE_PARSERS, parsers.MultiPartParser]

    @extend_schema(
        summary="Export the history",
        description="The cluster's recorded history of [since, until) as a JSON-lines file (docs/history.md): "
                    "the state in force at `since`, then every event. Default `since`: the start of what is "
                    "retained (LOADMASTER_HISTORY_DAYS); default `until`: now. `import=<id>` exports an imported "
                    "history instead.",
        parameters=[OpenApiParameter("since", OpenApiTypes.DATETIME), OpenApiParameter("until", OpenApiTypes.DATETIME),
                    OpenApiParameter("import", OpenApiTypes.INT)],
        responses={(200, MEDIA_TYPE): OpenApiTypes.STR},
    )
    def get(self, request: Request) -> StreamingHttpResponse | Response:
        now = timezone.now()
        since = _time_param(request, "since") or selectors.history_window_default(now)
        until = _time_param(request, "until")
        if until is not None and until <= since:
            raise serializers.ValidationError({"until": ["must be later than since."]})
        imported = None
        raw = request.query_params.get("import")
        if raw:
            imported = selectors.history_import_get(pk=int(raw)) if raw.isdigit() and len(raw) <= 18 else None
            if imported is None:
                raise serializers.ValidationError({"import": [f"no imported history {raw[:20]!r}."]})
        response = StreamingHttpResponse(selectors.history_lines(since=since, until=until, imported=imported),
                                         content_type=MEDIA_TYPE)
        response["Content-Disposition"] = f'attachment; filename="history-{since:%Y%m%dT%H%M%SZ}.jsonl"'
        return response

    @extend_schema(
        summary="Import a history file",
        description="A JSON-lines history file (docs/history.md) as the raw body (application/x-ndjson) or as a "
                    "multipart upload `file`, kept as a history of its own (export it with ?import=<id>). All or "
                    "nothing: a bad line is a 400 naming the line and the field, and nothing is saved.",
        request={MEDIA_TYPE: OpenApiTypes.STR,
                 "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string",
                                                                                    "format": "binary"}}}},
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        name = ""
        if request.FILES:
            upload = request.FILES.get("file")
            if upload is None:
                raise serializers.ValidationError({"file": ["Upload the history as the field `file`."]})
            data = upload.read()
            name = upload.name or ""
        else:
            data = request.data if isinstance(request.data, bytes) else b""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return Response({"detail": "The history is not UTF-8 text.", "line": None, "field": ""},
                            status=status.HTTP_400_BAD_REQUEST)
        try:
            lines = text.split("\n")  # at newlines only: a JSON string may hold U+2028, which splitlines splits at
            if lines and lines[-1] == "":
                lines.pop()
            record = services.history_import(lines=lines, name=name, user=request.user)
        except services.HistoryImportError as e:
            return Response({"detail": f"Nothing was imported: {e.messages[0]}", "line": e.line, "field": e.field},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response({"import": record.pk, "events": record.events, "name": record.name},
                        status=status.HTTP_201_CREATED)
