"""Roles in one place: every URL pattern, every unsafe method, as a viewer — 403, no write, no 500."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core import serializers
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from console.access import VIEWER_WRITES
from console.alerts.models import AlertRule, Channel
from console.commitments.models import Commitment
from console.fleet.models import EC2NodeClass, NodePool
from console.overlays.models import NodeOverlay
from tests.console_pages import nodeclass, operator, operator_client, pool, viewer, viewer_client  # noqa: F401

pytestmark = pytest.mark.django_db
UNSAFE = ("post", "put", "patch", "delete")
# Values for the URL parameters: names and ids of the objects the fixture below creates, so a
# missing check would really change something.
SAMPLES = {"name": "general", "pk": "1", "namespace": "default", "app_label": "auth", "model_name": "user",
           "object_id": "1", "content_type_id": "1", "url": "x", "version": "1", "format": "json", "path": "x",
           "key": "default/headroom"}


def _routes(resolver: URLResolver, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str]]:
    """(path, view name) for every pattern, parameters filled from SAMPLES."""
    for entry in resolver.url_patterns:
        route = str(entry.pattern)
        if isinstance(entry, URLResolver):
            ns = ":".join(x for x in (namespace, entry.namespace or "") if x)
            yield from _routes(entry, prefix + route, ns)
        elif isinstance(entry, URLPattern):
            full = prefix + route
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name or ""
            yield _fill(full), name


def _fill(route: str) -> str:
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLES.get(m.group(1), "x"), route)
    route = route.replace("<drf_format_suffix:format>", ".json")
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLES.get(m.group(1), "x"), route)
    route = re.sub(r"\\\.", ".", route)
    route = route.replace("^", "").replace("$", "").replace("/?", "/").replace("\\Z", "")
    route = re.sub(r"\(\?:[^)]*\)\??", "", route)
    return "/" + route.lstrip("/")


def _state() -> str:
    """A digest of every row of the console's own tables (a write anywhere changes it)."""
    digest = hashlib.sha256()
    for model in apps.get_models():
        if model._meta.app_label in {"fleet", "catalog", "control", "alerts", "whatif", "dashboards",
                                     "simulation", "buffers", "overlays", "commitments", "replay", "auth", "authtoken"} and model is not User:
            digest.update(serializers.serialize("json", model.objects.order_by("pk")).encode())
    digest.update(repr(list(User.objects.order_by("pk").values_list("username", "is_active", "is_staff",
                                                                    "is_superuser", "password"))).encode())
    return digest.hexdigest()


@pytest.fixture
def fleet(pool: NodePool, nodeclass: EC2NodeClass) -> None:  # noqa: F811
    channel = Channel(name="ops", kind=Channel.WEBHOOK)
    channel.set_secret("https://hooks.slack.com/services/T0/B0/x")
    channel.save()
    AlertRule.objects.create(name="budget", kind=AlertRule.BUDGET, metric="cost_per_hour",
                             threshold=Decimal(10), channel=channel)
    NodeOverlay.objects.create(name="m5-discount", price_adjustment="-10%",
                               requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                              "values": ["m5"]}])
    Commitment.objects.create(name="ri-m5", type="ReservedInstances", instance_type="m5.large", count=2)


def _viewer_session(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_every_unsafe_method_needs_the_operator_role(fleet: None, viewer: User) -> None:  # noqa: F811
    routes = sorted(set(_routes(get_resolver())))
    assert len(routes) > 50      # the walk really found the console's URLs
    token = Token.objects.create(user=viewer).key
    before = _state()
    failures: list[str] = []
    for path, name in routes:
        for method in UNSAFE:
            # Session (pages and API) and token (API) authentication: both are judged the same way.
            clients = [(_viewer_session(viewer), {})]
            if path.startswith("/api/"):
                clients.append((Client(), {"HTTP_AUTHORIZATION": f"Token {token}"}))
            for client, extra in clients:
                response = getattr(client, method)(path, data={}, **extra)
                code = response.status_code
                if name in VIEWER_WRITES:
                    if code >= 500:
                        failures.append(f"{method.upper()} {path} ({name}): {code}")
                elif code != 403:
                    failures.append(f"{method.upper()} {path} ({name}): {code}, expected 403")
    assert failures == [], "\n".join(failures)
    assert _state() == before, "a viewer's request changed the database"


def test_viewer_writes_are_only_reads_and_sign_in(viewer: User) -> None:  # noqa: F811
    # The allowed list stays short and obvious: previews (which save nothing) and signing in and out.
    assert all(n.split(":")[-1] in {"login", "logout", "token", "preview"} or n.endswith(("-preview", "-preview-new"))
               for n in VIEWER_WRITES)


def test_delete_method_on_delete_pages(fleet: None, viewer_client: Client,  # noqa: F811
                                       operator_client: Client) -> None:  # noqa: F811
    # DELETE used to bypass the check in get/post (a viewer only escaped by a signature mismatch).
    assert viewer_client.delete("/nodepools/general/delete/").status_code == 403
    assert operator_client.delete("/nodepools/general/delete/").status_code == 405
    assert NodePool.objects.filter(name="general").exists()


def test_viewer_403_logs_one_line_without_traceback(fleet: None, viewer_client: Client,  # noqa: F811
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        page = viewer_client.get("/nodepools/new/")      # require_operator in the view
        post = viewer_client.post("/nodepools/general/delete/")     # refused by the middleware
    assert page.status_code == post.status_code == 403
    assert b"operator role" in page.content and b"operator role" in post.content
    forbidden = [r for r in caplog.records if r.levelno >= logging.INFO and "Forbidden" in r.getMessage()]
    assert len(forbidden) == 2 and all(r.exc_info is None for r in caplog.records)


def test_operator_api_writes_still_work(fleet: None, operator: User) -> None:  # noqa: F811
    client = Client()
    key = Token.objects.create(user=operator).key
    response = client.patch("/api/nodepools/general/", data={"weight": 20}, content_type="application/json",
                            HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200, response.content
    assert NodePool.objects.get(name="general").weight == 20


