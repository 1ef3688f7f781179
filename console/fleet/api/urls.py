"""/api/: the REST API (see views.py), its OpenAPI schema and the Swagger UI."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from console.fleet.api import views
from console.throttling import obtain_auth_token

app_name = "api"

# No format suffixes: object names may contain dots ("gpu.large" is a valid NodePool name).
router = DefaultRouter()
router.include_format_suffixes = False
router.register("nodepools", views.NodePoolViewSet, basename="nodepool")
router.register("nodeclasses", views.EC2NodeClassViewSet, basename="nodeclass")
router.register("nodeclaims", views.NodeClaimViewSet, basename="nodeclaim")
router.register("decisions", views.DecisionViewSet, basename="decision")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", views.DocsView.as_view(), name="docs"),
    path("token/", obtain_auth_token, name="token"),
    path("import/", views.ImportView.as_view(), name="import"),
    path("capacitybuffers/<str:namespace>/<str:name>/history/", views.BufferHistoryView.as_view(),
         name="capacitybuffer-history"),
    path("", include(router.urls)),
]
