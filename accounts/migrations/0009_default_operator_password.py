"""Flags the superusers whose password is still the default "admin": they must change it at their
next sign-in, like an operator account made now (accounts/policy.py)."""

from django.contrib.auth.hashers import check_password
from django.db import migrations


def flag_default_passwords(apps, schema_editor):
    User = apps.get_model("auth", "User")
    AccountPolicy = apps.get_model("accounts", "AccountPolicy")
    for user in User.objects.filter(is_superuser=True).only("pk", "password"):
        if user.password and check_password("admin", user.password):
            AccountPolicy.objects.update_or_create(user_id=user.pk, defaults={"must_change_password": True})


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_identity"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(flag_default_passwords, migrations.RunPython.noop)]
