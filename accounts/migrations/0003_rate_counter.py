from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_cache_table"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateCounter",
            fields=[
                ("key", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("window_index", models.BigIntegerField(help_text="Unix time divided by the period.")),
                ("current", models.PositiveIntegerField(default=0)),
                ("previous", models.PositiveIntegerField(default=0)),
                (
                    "allowed",
                    models.BooleanField(default=True, help_text="Whether the last request was let through."),
                ),
                ("touched_at", models.DateTimeField(db_index=True)),
            ],
        ),
    ]
