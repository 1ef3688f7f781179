"""/api/history/ (console/urls.py includes it under api/)."""

from django.urls import path

from console.history.api import views

app_name = "history-api"

urlpatterns = [
    path("history/", views.HistoryView.as_view(), name="history"),
]
