"""Who may do what: every page needs a login; viewers read, operators also write.

Roles are Django groups named ``viewer`` and ``operator`` (superusers count as operators). A
logged-in user in neither group can read, never write: writes are granted, not assumed.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import SAFE_METHODS, BasePermission

OPERATOR = "operator"
VIEWER = "viewer"
ROLES = (VIEWER, OPERATOR)

# Paths reachable without a session: the login form itself, static assets, and the API and
# /metrics, which answer 401/403 themselves (a redirect to an HTML login page is useless to an API
# client or a Prometheus scraper).
_PUBLIC_PREFIXES = ("/accounts/login/", "/static/", "/api/", "/favicon.ico", "/metrics")


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
        raise PermissionDenied("This action needs the operator role; you are signed in as a viewer.")


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
