from django.contrib import admin
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path

from tarsy.api.docs import DocsView, SchemaView
from tarsy.api.errors import api_not_found
from tarsy.metrics import metrics_view
from tarsy.web.health import health

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operational endpoints, no login: probes and scrapers carry no user credentials (see tarsy/metrics.py).
    path("health", health, name="health"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("tarsy.api.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", DocsView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^api/", api_not_found),  # any other /api/ path, whatever the method: a JSON 404, also with DEBUG on
    # Installed apps' own files (the admin's, Swagger UI's), found in their packages: TARSy needs no separate file
    # server and `make run` no collectstatic. `insecure` only means "also with DEBUG off"; paths stay confined.
    re_path(r"^static/(?P<path>(?:admin|drf_spectacular_sidecar)/.+)$", serve_static, {"insecure": True}),
    path("", include("tarsy.dashboard.urls")),
]

handler404 = "tarsy.api.errors.handler404"
handler500 = "tarsy.api.errors.handler500"
