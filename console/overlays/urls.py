from django.urls import path

from console.overlays import views

app_name = "overlays"

urlpatterns = [
    path("nodeoverlays/", views.overlay_list, name="overlay-list"),
    path("nodeoverlays/new/", views.OverlayEditView.as_view(), name="overlay-create"),
    path("nodeoverlays/<str:name>/", views.OverlayEditView.as_view(), name="overlay-edit"),
    path("nodeoverlays/<str:name>/delete/", views.OverlayDeleteView.as_view(), name="overlay-delete"),
]
