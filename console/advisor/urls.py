from django.urls import path

from console.advisor import views

app_name = "advisor"

urlpatterns = [
    path("", views.advisor_index, name="index"),
    path("iam-preflight/", views.iam_preflight, name="iam-preflight"),
    path("fix/nodepool/<str:name>/<str:code>/", views.FixFormView.as_view(), name="nodepool-fix"),
]
