"""Sign-in throttling: too many failed passwords for one user name, or from one address, lock that
user name or address out for a while — on the login page and on /api/token/ alike.

Failures are counted in Django's cache ("default"), so every web process must share one cache for
the limit to hold across processes (docs/settings.md: the default file cache in LOADMASTER_VAR_DIR
is shared by the processes of one machine; several machines need LOADMASTER_CACHE_URL=redis://…).
A lockout ends when its window does: the counter expires LOADMASTER_LOGIN_LOCKOUT_SECONDS after the
first failure that started it; the right password during the lockout is refused like a wrong one.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from rest_framework import status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response

log = logging.getLogger(__name__)
_now = time.time     # a seam for tests


def _limits() -> tuple[int, int, int]:
    return (int(settings.LOADMASTER_LOGIN_FAILURES_PER_USER), int(settings.LOADMASTER_LOGIN_FAILURES_PER_ADDRESS),
            int(settings.LOADMASTER_LOGIN_LOCKOUT_SECONDS))


def client_address(request: HttpRequest) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is whatever the client wants it to be (docs/console.md: behind a proxy,
    # have it set REMOTE_ADDR, e.g. gunicorn's --forwarded-allow-ips).
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    per_user, per_address, _ = _limits()
    user = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return [(f"loadmaster:login:user:{user}", per_user), (f"loadmaster:login:addr:{address}", per_address)]


def locked_for(username: str, address: str) -> int:
    """Seconds until this user name and address may try again (0: not locked out)."""
    now = _now()
    wait = 0.0
    for key, limit in _keys(username, address):
        entry = cache.get(key)
        if isinstance(entry, dict) and entry.get("count", 0) >= limit:
            wait = max(wait, float(entry.get("until", now)) - now)
    return max(0, math.ceil(wait))


def record_failure(username: str, address: str) -> None:
    window = _limits()[2]
    now = _now()
    for key, _ in _keys(username, address):
        entry = cache.get(key)
        if not isinstance(entry, dict) or float(entry.get("until", 0)) <= now:
            entry = {"count": 0, "until": now + window}
        entry["count"] = int(entry["count"]) + 1
        cache.set(key, entry, timeout=max(1, math.ceil(float(entry["until"]) - now)))
    log.info("sign-in failed for %r from %s", username[:150], address)


def record_success(username: str, address: str) -> None:
    # Only the user name's counter: a valid account must not reset an address's count of guesses
    # at other accounts.
    cache.delete(_keys(username, address)[0][0])


def lockout_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (f"Too many failed sign-ins for this user or from this address. Try again in {minutes} "
            f"minute{'s' if minutes != 1 else ''}.")


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing before it checks the password while a lockout lasts."""

    locked_seconds = 0

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username") or "")
        address = client_address(self.request) if self.request is not None else "unknown"
        wait = locked_for(username, address)
        if wait:
            self.locked_seconds = wait
            raise forms.ValidationError(lockout_message(wait), code="throttled")
        try:
            data = super().clean()
        except forms.ValidationError:
            record_failure(username, address)
            raise
        record_success(username, address)
        return data


class ThrottledLoginView(LoginView):
    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        wait = getattr(form, "locked_seconds", 0)
        if wait:
            response.status_code = 429
            response["Retry-After"] = str(wait)
        return response


class ThrottledObtainAuthToken(ObtainAuthToken):
    """POST username + password → token, with the same lockout as the login page (429 + Retry-After)."""

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        username = str(request.data.get("username") or "") if hasattr(request.data, "get") else ""
        address = client_address(request._request)
        wait = locked_for(username, address)
        if wait:
            return Response({"detail": lockout_message(wait)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": str(wait)})
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            if username:
                record_failure(username, address)
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        record_success(username, address)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})


obtain_auth_token = ThrottledObtainAuthToken.as_view()
