from django.urls import path

from console.buffers import views

app_name = "buffers"

urlpatterns = [
    path("buffers/", views.buffer_list, name="buffer-list"),
    path("buffers/new/", views.BufferEditView.as_view(), name="buffer-create"),
    path("buffers/<str:namespace>/<str:name>/", views.BufferEditView.as_view(), name="buffer-edit"),
    path("buffers/<str:namespace>/<str:name>/delete/", views.BufferDeleteView.as_view(), name="buffer-delete"),
]
