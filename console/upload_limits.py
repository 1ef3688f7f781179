"""LOADMASTER_MAX_UPLOAD_BYTES for every request body: YAML pasted or uploaded on /import/, raw and
multipart bodies on /api/import/, snapshot uploads — whatever the parser.

Django's DATA_UPLOAD_MAX_MEMORY_SIZE leaves file parts out, and a raw body read from the stream (as
DRF's parsers do) is not counted at all, so the limit is applied here, to the whole body, before
anything reads it: the declared Content-Length (which bounds what Django will read) must not exceed
the limit. The body holds every file of a multipart upload, so each file, and all of them together,
are within it. The answer is 413 naming the limit: JSON under /api/, a page elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader


def max_upload_bytes() -> int:
    return int(settings.LOADMASTER_MAX_UPLOAD_BYTES)


def describe(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB".replace(".0 MiB", " MiB")
    if n >= 2**10:
        return f"{n / 2**10:.1f} KiB".replace(".0 KiB", " KiB")
    return f"{n} bytes"


def too_big_message(size: int, limit: int) -> str:
    return (f"The request is {describe(size)}; uploads are limited to {describe(limit)} "
            f"(LOADMASTER_MAX_UPLOAD_BYTES={limit}), for all files and fields together.")


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0     # Django reads nothing of a body whose length it cannot parse
        limit = max_upload_bytes()
        if size > limit:
            message = too_big_message(size, limit)
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message, "limit_bytes": limit}, status=413)
            body = loader.render_to_string("413.html", {"message": message}, request)
            return HttpResponse(body, status=413)
        return self.get_response(request)
