"""/api/replays/ (console/urls.py includes it under "api/")."""

from __future__ import annotations

from django.urls import path

from console.replay import api

app_name = "replay-api"

urlpatterns = [
    path("replays/", api.ReplayListView.as_view(), name="list"),
    path("replays/<int:pk>/", api.ReplayDetailView.as_view(), name="detail"),
    path("replays/<int:pk>/cancel/", api.ReplayCancelView.as_view(), name="cancel"),
]
