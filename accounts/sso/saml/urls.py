"""The URLs allauth's provider registry mounts for SAML (names as allauth's own)."""

from allauth.socialaccount.providers.saml import views as allauth_views
from django.urls import include, path, re_path

from accounts.sso.saml import views

urlpatterns = [
    re_path(
        r"^saml/(?P<organization_slug>[^/]+)/",
        include(
            [
                path("acs/", allauth_views.acs, name="saml_acs"),
                path("acs/finish/", views.finish_acs, name="saml_finish_acs"),
                path("sls/", allauth_views.sls, name="saml_sls"),
                path("metadata/", allauth_views.metadata, name="saml_metadata"),
                path("login/", views.login, name="saml_login"),
            ]
        ),
    )
]
