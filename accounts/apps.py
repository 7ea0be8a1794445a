from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts import audit_signals, checks  # noqa: F401 (checks register themselves)

        audit_signals.connect()
