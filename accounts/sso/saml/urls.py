"""The URLs allauth's provider registry mounts for SAML (names as allauth's own).

Single logout is not offered: its address answers 404 (a logout request that need not be signed
would let any site sign a visitor out), though it keeps its name, which the metadata reverses."""

from allauth.socialaccount.providers.saml import views as allauth_views
from django.urls import include, path, re_path

from accounts.sso.saml import views
from accounts.sso.urls import not_found

urlpatterns = [
    re_path(
        r"^saml/(?P<organization_slug>[^/]+)/",
        include(
            [
                path("acs/", allauth_views.acs, name="saml_acs"),
                path("acs/finish/", views.finish_acs, name="saml_finish_acs"),
                path("sls/", not_found, name="saml_sls"),
                path("metadata/", allauth_views.metadata, name="saml_metadata"),
                path("login/", views.login, name="saml_login"),
            ]
        ),
    )
]
