from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import passkey_signup, token_views, views

app_name = "accounts"

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", views.signup, name="signup"),
    path("signup/passkey/", passkey_signup.passkey_signup, name="signup_passkey"),
    path("signup/passkey/create/", passkey_signup.passkey_signup_create, name="signup_passkey_create"),
    path("tokens/", token_views.tokens_page, name="tokens"),
    path("tokens/<int:token_id>/revoke/", token_views.token_revoke_view, name="token_revoke"),
    # Password change (signed in) and reset (by email). Django's auth views, with
    # namespaced success URLs and our own templates; change and reset also revoke API tokens.
    path(
        "password/change/",
        views.PasswordChangeView.as_view(
            template_name="accounts/password_change_form.html",
            success_url=reverse_lazy("accounts:password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "password/change/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="accounts/password_change_done.html"),
        name="password_change_done",
    ),
    path(
        "password/reset/",
        views.PasswordResetView.as_view(
            template_name="accounts/password_reset_form.html",
            email_template_name="accounts/password_reset_email.html",  # sent as plain text
            success_url=reverse_lazy("accounts:password_reset_done"),
        ),
        name="password_reset",
    ),
    path(
        "password/reset/done/",
        auth_views.PasswordResetDoneView.as_view(template_name="accounts/password_reset_done.html"),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(
            template_name="accounts/password_reset_confirm.html",
            success_url=reverse_lazy("accounts:password_reset_complete"),
        ),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        auth_views.PasswordResetCompleteView.as_view(template_name="accounts/password_reset_complete.html"),
        name="password_reset_complete",
    ),
]
