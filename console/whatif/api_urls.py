"""/api/ endpoints of the what-if app (include under "api/" with namespace "whatif-api")."""

from __future__ import annotations

from django.urls import path

from console.whatif import api

app_name = "whatif-api"

urlpatterns = [
    path("whatif/", api.PreviewView.as_view(), name="preview"),
    path("pods/<str:namespace>/<str:name>/why", api.PodWhyView.as_view(), name="pod-why"),
    path("nodes/<str:name>/why", api.NodeWhyView.as_view(), name="node-why"),
]
