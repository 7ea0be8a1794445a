"""Concurrency slots, in an UNLOGGED table like the rate counters: taking one waits for no disk flush,
and a crash that empties the table only frees every slot, which the crash ended the work of anyway."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_audit_purge_cutoff"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConcurrencySlot",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "key",
                    models.CharField(
                        help_text="The work and who runs it, e.g. source_preview_12.", max_length=255
                    ),
                ),
                ("number", models.PositiveSmallIntegerField(help_text="0 up to the limit less one.")),
                ("holder", models.UUIDField(help_text="Whoever took it: only they give it back.")),
                ("expires_at", models.DateTimeField(db_index=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("key", "number"), name="concurrency_slot_once")
                ],
            },
        ),
        migrations.RunSQL(
            "ALTER TABLE accounts_concurrencyslot SET UNLOGGED",
            reverse_sql="ALTER TABLE accounts_concurrencyslot SET LOGGED",
        ),
    ]
