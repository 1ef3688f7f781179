from django.urls import path

from console.commitments import views

app_name = "commitments"

urlpatterns = [
    path("commitments/", views.commitment_list, name="commitment-list"),
    path("commitments/new/", views.CommitmentEditView.as_view(), name="commitment-create"),
    path("commitments/<str:name>/", views.CommitmentEditView.as_view(), name="commitment-edit"),
    path("commitments/<str:name>/delete/", views.CommitmentDeleteView.as_view(), name="commitment-delete"),
]
