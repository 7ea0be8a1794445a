"""The database cache's table (CACHES in config/settings.py), made by ``migrate``.

Django creates it only with ``manage.py createcachetable``; doing it here means
every start that migrates (``make run``, a deployment) has it. With REDIS_URL
set there is no database cache and nothing is created.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
