from django.urls import path

from console.catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.catalog, name="catalog"),
    path("overrides/", views.override_create, name="override-create"),
    path("overrides/<str:name>/delete/", views.override_delete, name="override-delete"),
]
