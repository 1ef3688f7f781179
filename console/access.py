"""Who may do what: every page needs a login; viewers read, operators also write.

Roles are Django groups named ``viewer`` and ``operator`` (superusers count as operators). A
logged-in user in neither group can read, never write: writes are granted, not assumed.

Roles are enforced in one place, ``RoleMiddleware``, for every view and every HTTP method: a safe
method (GET, HEAD, OPTIONS, TRACE) is a read, anything else a write that needs the operator role,
unless the view is one of the few listed in ``VIEWER_WRITES`` (signing in and out, and previews that
compute an answer and save nothing). Views keep their own ``require_operator`` calls for pages that
are writes even on GET (the edit forms), but no view can forget the check for an unsafe method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from rest_framework import exceptions as drf_exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission

log = logging.getLogger(__name__)

OPERATOR = "operator"
VIEWER = "viewer"
ROLES = (VIEWER, OPERATOR)

# Paths reachable without a session: the login form itself, static assets, and the API and
# /metrics, which answer 401/403 themselves (a redirect to an HTML login page is useless to an API
# client or a Prometheus scraper).
_PUBLIC_PREFIXES = ("/accounts/login/", "/static/", "/api/", "/favicon.ico", "/metrics")

# The only views a non-operator may call with an unsafe method (by URL name): signing in and out,
# asking for an API token, and the previews, which run the engine on submitted values and save nothing.
VIEWER_WRITES = frozenset({
    "login", "logout", "admin:login", "admin:logout", "api:token",
    "whatif:nodepool-preview", "whatif:nodepool-preview-new",
    "whatif:nodeclass-preview", "whatif:nodeclass-preview-new",
    "whatif-api:preview",
})
OPERATOR_ONLY = "This action needs the operator role; you are signed in as a viewer."


def is_operator(user: Any) -> bool:
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_loadmaster_is_operator", None)
    if cached is None:
        cached = user.groups.filter(name=OPERATOR).exists()
        user._loadmaster_is_operator = cached
    return bool(cached)


def role_of(user: Any) -> str:
    return OPERATOR if is_operator(user) else VIEWER


class LoginRequiredMiddleware:
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated and not request.path.startswith(_PUBLIC_PREFIXES):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)


def require_operator(request: HttpRequest) -> None:
    """Refuse a viewer's write loudly; the 403 page tells them which role they lack."""
    if not is_operator(request.user):
        raise PermissionDenied(OPERATOR_ONLY)


def is_api_view(view_func: Any) -> bool:
    # Imported here: rest_framework.views imports this module (RolePermission) through its settings.
    from rest_framework.views import APIView

    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return isinstance(view_class, type) and issubclass(view_class, APIView)


def _api_user(request: HttpRequest) -> Any:
    """The user an API request acts as: its token's (as DRF will see it), else the session's."""
    try:
        found = TokenAuthentication().authenticate(request)  # type: ignore[arg-type]
    except drf_exceptions.AuthenticationFailed:
        return None     # a bad token: DRF answers 401 itself
    return found[0] if found else request.user


def forbidden(request: HttpRequest, message: str = OPERATOR_ONLY) -> HttpResponse:
    """The 403 page (or JSON under /api/), logged as one line by django.request, no traceback."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=403)
    body = loader.render_to_string("403.html", {"exception": message}, request)
    return HttpResponse(body, status=403)


class RoleMiddleware:
    """Every unsafe method on every view needs the operator role (see the module docstring).

    Runs after authentication: pages see the session user; API views are judged as the user their
    token names (an anonymous or badly authenticated API request is left to DRF's 401). A refusal is
    a plain 403 response, and a PermissionDenied raised by a view becomes the same page: Django logs
    one "Forbidden" line for it, not a traceback per refused click.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        if request.method in SAFE_METHODS:
            return None
        match = getattr(request, "resolver_match", None)
        if match is not None and match.view_name in VIEWER_WRITES:
            return None
        if is_api_view(view_func):
            user = _api_user(request)
            if user is None or not getattr(user, "is_authenticated", False):
                return None     # DRF answers 401 with WWW-Authenticate
        else:
            user = request.user
        if is_operator(user):
            return None
        return forbidden(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, PermissionDenied):
            return forbidden(request, str(exception) or "You do not have permission to do this.")
        return None


class OperatorRequiredMixin:
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        require_operator(request)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


class RolePermission(BasePermission):
    """API: authenticated users read; only operators create, change or delete."""

    message = "This action needs the operator role."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return True
        return is_operator(request.user)


def role_context(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_operator": is_operator(user), "role": role_of(user) if user else VIEWER}
