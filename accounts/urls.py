from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import token_views, views

app_name = "accounts"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", views.signup, name="signup"),
    path("tokens/", token_views.tokens_page, name="tokens"),
    path("tokens/<int:token_id>/revoke/", token_views.token_revoke_view, name="token_revoke"),
]
