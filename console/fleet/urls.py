from django.urls import path

from console.fleet import views

app_name = "fleet"

urlpatterns = [
    path("nodepools/", views.NodePoolListView.as_view(), name="nodepool-list"),
]
