from __future__ import annotations

from django.urls import path

from console.alerts import views

app_name = "alerts"
urlpatterns = [
    path("channels/", views.channel_list, name="channel-list"),
    path("channels/new/", views.channel_edit, name="channel-create"),
    path("channels/<int:pk>/", views.channel_edit, name="channel-edit"),
    path("channels/<int:pk>/delete/", views.channel_delete, name="channel-delete"),
    path("channels/<int:pk>/test/", views.channel_test, name="channel-test"),
    path("rules/", views.rule_list, name="rule-list"),
    path("rules/new/", views.rule_edit, name="rule-create"),
    path("rules/<int:pk>/", views.rule_edit, name="rule-edit"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule-delete"),
    path("history/", views.history, name="history"),
]
