from django import forms
from django.contrib.auth.forms import PasswordChangeForm, UserCreationForm


class SignUpForm(UserCreationForm):
    """Sign-up with an email address, so a forgotten password can be reset."""

    email = forms.EmailField(required=True, help_text="Used only to reset your password.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class PasswordChangeWithTokensForm(PasswordChangeForm):
    """A password change that, unless unticked, also cuts off every API token (they outlive passwords)."""

    revoke_api_tokens = forms.BooleanField(
        required=False,
        initial=True,
        label="Also revoke my API tokens",
        help_text="Scripts using them are refused until you give them new tokens.",
    )
