"""The URLs allauth's provider registry mounts for OpenID Connect (names as allauth's own)."""

from django.urls import include, path, re_path

from accounts.sso.oidc import views

urlpatterns = [
    path(
        "oidc/",
        include(
            [
                re_path(
                    r"^(?P<provider_id>[^/]+)/",
                    include(
                        [
                            path("login/", views.login, name="openid_connect_login"),
                            path("login/callback/", views.callback, name="openid_connect_callback"),
                        ]
                    ),
                )
            ]
        ),
    )
]
