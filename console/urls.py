from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from console.throttling import ThrottledLoginView

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboards:overview", permanent=False)),
    # Browsers ask for /favicon.ico on every page; the icon is a static file (served by WhiteNoise).
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("console/favicon.ico"), permanent=False),
         name="favicon"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/alerts/", include("console.alerts.api")),
    path("api/", include("console.whatif.api_urls")),
    path("api/", include("console.buffers.api.urls")),
    path("api/", include("console.history.urls")),
    path("api/", include("console.replay.api_urls")),
    path("api/", include("console.fleet.api.urls")),
    path("api/", include("console.advisor.api_urls")),
    path("api/", include("console.overlays.api.urls")),
    path("api/", include("console.commitments.api.urls")),
    path("whatif/replay/", include("console.replay.urls")),
    path("whatif/", include("console.whatif.urls")),
    path("alerts/", RedirectView.as_view(pattern_name="alerts:rule-list", permanent=False)),
    path("alerts/", include("console.alerts.urls")),
    path("catalog/", include("console.catalog.urls")),
    path("advisor/", include("console.advisor.urls")),
    path("", include("console.dashboards.urls")),
    path("", include("console.buffers.urls")),
    path("", include("console.overlays.urls")),
    path("", include("console.commitments.urls")),
    path("", include("console.fleet.urls")),
]
