"""Create the operator (superuser) account on first start, if there is none."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.audit import command_audited
from accounts.policy import DEFAULT_OPERATOR_PASSWORD, policy_require_password_change
from config.base.env import env_str


class Command(BaseCommand):
    help = "Create an operator account from OPERATOR_USERNAME / OPERATOR_PASSWORD if no superuser exists."

    @command_audited
    def handle(self, *args, **options):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("Operator account already exists.")
            return
        username = env_str("OPERATOR_USERNAME", "admin")
        password = env_str("OPERATOR_PASSWORD", DEFAULT_OPERATOR_PASSWORD)
        user = User.objects.create_superuser(username=username, email="", password=password)
        if password == DEFAULT_OPERATOR_PASSWORD:
            # Everyone knows it: the first sign-in must replace it (accounts/policy.py).
            policy_require_password_change(user=user)
        self.stdout.write(
            f"Created operator account {username!r} (password from OPERATOR_PASSWORD, default 'admin';"
            " the default must be changed at the first sign-in)."
        )
