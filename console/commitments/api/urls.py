"""/api/commitments/ (in the API's OpenAPI schema with the fleet's endpoints)."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from console.commitments.api import views

app_name = "commitments-api"

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.include_format_suffixes = False
router.register("commitments", views.CommitmentViewSet, basename="commitment")

urlpatterns = [path("", include(router.urls))]
