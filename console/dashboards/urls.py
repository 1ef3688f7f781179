from __future__ import annotations

from django.urls import path

from console.dashboards import metrics, views

app_name = "dashboards"

urlpatterns = [
    path("dashboards/", views.overview, name="overview"),
    path("dashboards/binpacking/", views.binpacking, name="binpacking"),
    path("dashboards/spot/", views.spot, name="spot"),
    path("dashboards/unschedulable/", views.unschedulable, name="unschedulable"),
    path("dashboards/cost/", views.cost, name="cost"),
    path("dashboards/commitments/", views.commitments, name="commitments"),
    # Versioned so a plotly upgrade changes the URL and the year-long cache never serves stale code.
    path("static-vendor/plotly-<str:version>.min.js", views.plotly_js, name="plotly-js"),
    path("metrics", metrics.metrics_view, name="metrics"),
]
