"""A server error answers with the console's own page, which renders without a request context (Django's
server_error view gives it none) and shows no traceback."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import path

from tests.users import make_user


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret detail that must not reach the page")


urlpatterns = [path("boom/", boom)]


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__, DEBUG=False)
def test_a_server_error_shows_the_console_page_without_details() -> None:
    client = Client(raise_request_exception=False)
    client.force_login(make_user("olive", "operator"))
    response = client.get("/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "<h1>Server error</h1>" in body
    assert "Nothing was saved by it" in body
    assert "secret detail" not in body and "Traceback" not in body
