from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts import audit_signals, checks, mfa_audit, policy  # noqa: F401 (checks register themselves)
        from accounts.sso import signals as sso_signals

        audit_signals.connect()
        policy.connect()
        mfa_audit.connect()
        sso_signals.connect()
