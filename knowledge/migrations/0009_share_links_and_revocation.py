"""Unlisted means "only with the link"; revoked subscriptions stay revoked.

Existing collections each get their own share token (a column default would
give every row the same one). Subscriptions to collections that are not
listed end: unlisting now ends them, instead of leaving them to come back
on relisting.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import knowledge.models.collections


def give_each_collection_a_token(apps, schema_editor):
    Collection = apps.get_model("knowledge", "Collection")
    for collection in Collection.objects.filter(share_token__isnull=True).only("pk").iterator():
        Collection.objects.filter(pk=collection.pk).update(
            share_token=knowledge.models.collections.new_share_token()
        )


def end_subscriptions_to_unlisted_collections(apps, schema_editor):
    Subscription = apps.get_model("knowledge", "Subscription")
    Subscription.objects.filter(is_active=True, collection__listed=False).update(is_active=False)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0008_agentic"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="share_token",
            field=models.CharField(editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(give_each_collection_a_token, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="collection",
            name="share_token",
            field=models.CharField(
                default=knowledge.models.collections.new_share_token,
                editable=False,
                help_text="The secret in the share link of an unlisted collection; rotating it drops its holders.",
                max_length=64,
                unique=True,
            ),
        ),
        migrations.AlterField(
            model_name="collection",
            name="visibility",
            field=models.CharField(
                choices=[
                    ("private", "Private (owner only)"),
                    ("unlisted", "Unlisted (anyone with the share link)"),
                    ("public", "Public (all signed-in users)"),
                ],
                default="private",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="subscription",
            name="revoked_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Set when the owner revokes it: no subscribing again until the owner reinstates the user.",
                null=True,
            ),
        ),
        migrations.RunPython(end_subscriptions_to_unlisted_collections, migrations.RunPython.noop),
        migrations.CreateModel(
            name="LinkGrant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "collection",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="link_grants",
                        to="knowledge.collection",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="link_grants",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("user", "collection"), name="one_link_grant_per_user")
                ]
            },
        ),
    ]
