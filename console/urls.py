from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboards:overview", permanent=False)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/alerts/", include("console.alerts.api")),
    path("api/", include("console.whatif.api_urls")),
    path("api/", include("console.fleet.api.urls")),
    path("whatif/", include("console.whatif.urls")),
    path("alerts/", RedirectView.as_view(pattern_name="alerts:rule-list", permanent=False)),
    path("alerts/", include("console.alerts.urls")),
    path("catalog/", include("console.catalog.urls")),
    path("", include("console.dashboards.urls")),
    path("", include("console.fleet.urls")),
]
