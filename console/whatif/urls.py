"""Pages under /whatif/ (include with namespace "whatif")."""

from __future__ import annotations

from django.urls import path

from console.whatif import views

app_name = "whatif"

urlpatterns = [
    path("", views.index, name="index"),
    path("nodepools/preview/", views.nodepool_preview, name="nodepool-preview-new"),
    path("nodepools/<str:name>/preview/", views.nodepool_preview, name="nodepool-preview"),
    path("nodeclasses/preview/", views.nodeclass_preview, name="nodeclass-preview-new"),
    path("nodeclasses/<str:name>/preview/", views.nodeclass_preview, name="nodeclass-preview"),
    path("pods/<str:namespace>/<str:name>/", views.pod_why, name="pod-why"),
    path("nodes/<str:name>/", views.node_why, name="node-why"),
    path("snapshots/", views.snapshot_list, name="snapshot-list"),
    path("snapshots/live/", views.snapshot_take_live, name="snapshot-live"),
    path("snapshots/compare/", views.snapshot_compare, name="snapshot-compare"),
    path("snapshots/<int:pk>/", views.snapshot_detail, name="snapshot-detail"),
    path("snapshots/<int:pk>/json/", views.snapshot_json, name="snapshot-json"),
    path("snapshots/<int:pk>/replay/", views.snapshot_replay, name="snapshot-replay"),
]
