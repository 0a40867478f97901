from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/inbox/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script from a URL, not inline: the pages' CSP allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include("inbox.api_urls")),
    path("audit/", include("inbox.audit_urls")),
    path("", include("inbox.urls")),
    path("", include("inbox.agent_urls")),
]
