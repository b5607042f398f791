from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from tarsy.api.health import health
from tarsy.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operational endpoints, no login: probes and scrapers carry no user credentials (see tarsy/metrics.py).
    path("health", health, name="health"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("tarsy.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("tarsy.dashboard.urls")),
]

handler404 = "tarsy.api.errors.handler404"
handler500 = "tarsy.api.errors.handler500"
