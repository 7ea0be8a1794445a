from django.contrib import admin
from django.urls import include, path

from knowledge.admin import insight
from knowledge.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/insight/", include(insight.urlpatterns)),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    # allauth's identity-provider sign-in; after ours, so our log-in and password pages win.
    path("accounts/", include("accounts.sso.urls")),
    path("api/v1/", include("knowledge.api.urls")),
    # SCIM 2.0 provisioning for identity providers (accounts/scim/), bearer tokens only.
    path("scim/v2/", include("accounts.scim.urls")),
    path("", include("knowledge.web.urls")),
]

handler404 = "knowledge.web.pages.error_404"
handler500 = "knowledge.web.pages.error_500"
