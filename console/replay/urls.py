"""Pages under /whatif/replay/ (console/urls.py includes them with namespace "replay")."""

from __future__ import annotations

from django.urls import path

from console.replay import views

app_name = "replay"

urlpatterns = [
    path("", views.index, name="index"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/progress/", views.progress, name="progress"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
]
