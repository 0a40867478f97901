from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.health import healthz
from inbox.web import sso as sso_views

handler500 = "config.unavailable.server_error"
handler404 = "config.errors.page_not_found"
handler403 = "config.errors.permission_denied"

urlpatterns = [
    path("", RedirectView.as_view(url="/inbox/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", sso_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", sso_views.LogoutView.as_view(), name="logout"),
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script from a URL, not inline: the pages' CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include("inbox.api_urls")),
    path("audit/", include("inbox.audit_urls")),
    path("", include("inbox.urls")),
    path("", include("inbox.agent_urls")),
]
