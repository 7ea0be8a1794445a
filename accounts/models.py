from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """A personal API token. Only a SHA-256 hash of the secret is stored; the secret is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI' or 'laptop'.")
    prefix = models.CharField(
        max_length=16, help_text="The secret's first characters, to tell tokens apart; not enough to use it."
    )
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret, hex.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Updated at most once a minute.")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Set when revoked; never cleared.")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class RateCounter(models.Model):
    """Request counts of one throttle key (scope and client) in its current and previous period.

    Written by one INSERT ... ON CONFLICT per request (accounts.rate_limits): the
    API's rate limits cost a single round trip, shared by every server process.
    """

    key = models.CharField(max_length=255, primary_key=True)
    window_index = models.BigIntegerField(help_text="Unix time divided by the period.")
    current = models.PositiveIntegerField(default=0)
    previous = models.PositiveIntegerField(default=0)
    allowed = models.BooleanField(default=True, help_text="Whether the last request was let through.")
    touched_at = models.DateTimeField(db_index=True)  # rows silent for a day are pruned by the workers

    def __str__(self) -> str:
        return f"{self.key}: {self.current} (+{self.previous} before)"


class ConcurrencySlot(models.Model):
    """One of the few slots of some work a user may run only so many of at once (accounts.concurrency),
    held while the work runs, across every server process.

    Taken by one statement (tried again after a lost race) and deleted when the work ends; a process
    that dies holding one leaves it to expire at ``expires_at``, after which the next taker has it.
    """

    key = models.CharField(max_length=255, help_text="The work and who runs it, e.g. source_preview_12.")
    number = models.PositiveSmallIntegerField(help_text="0 up to the limit less one.")
    holder = models.UUIDField(help_text="Whoever took it: only they give it back.")
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "number"], name="concurrency_slot_once")]

    def __str__(self) -> str:
        return f"{self.key} #{self.number} until {self.expires_at:%H:%M:%S}"


class AuditEvent(models.Model):
    """One security-relevant event: who did what to which object, from where, through which door.

    Append-only: a PostgreSQL trigger (migration 0005) refuses UPDATE and DELETE; only the
    retention purge (accounts.audit.audit_events_purge) may delete, and only old rows. Secrets are
    never stored: a changed password, key or token is recorded as "(changed)".
    """

    class Channel(models.TextChoices):
        PAGE = "page"
        API = "api"
        ADMIN = "admin"
        MCP = "mcp"
        COMMAND = "command"
        WORKER = "worker"
        SCIM = "scim"

    # SET_NULL is the one UPDATE the trigger lets through: the name below keeps who it was.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    address = models.CharField(max_length=64, blank=True, help_text="The client's address, if any.")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    action = models.CharField(max_length=64, db_index=True, help_text="e.g. auth.login, collection.changed")
    object_type = models.CharField(max_length=100, blank=True, help_text="app_label.model")
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    changes = models.JSONField(default=dict, blank=True, help_text="{field: [before, after]}")

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "audit event"
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object_idx")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.object_repr}"


class AccountPolicy(models.Model):
    """Rules for one account beyond Django's fields; a row only for an account that needs one."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account_policy"
    )
    must_change_password = models.BooleanField(
        default=False,
        help_text="Every page sends the account to the password change form until the password changes "
        "(set for the operator account made with the default password).",
    )

    class Meta:
        verbose_name = "account policy"
        verbose_name_plural = "account policies"

    def __str__(self) -> str:
        return f"policy of user {self.user_id}"


class TeamMapping(models.Model):
    """One of an identity source's groups, and the team (auth group) its members join at sign-in."""

    source = models.CharField(
        max_length=100,
        help_text='Where the groups come from: "oidc:<provider id>" (e.g. oidc:keycloak), '
        '"saml:<slug>", "ldap".',
    )
    external_group = models.CharField(
        max_length=500, help_text="The group's name as the source sends it (compared without regard to case)."
    )
    team = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="identity_mappings")

    class Meta:
        ordering = ["source", "external_group"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_group", "team"], name="team_mapping_once")
        ]

    def __str__(self) -> str:
        return f"{self.source}: {self.external_group} → {self.team_id}"


class TeamGrant(models.Model):
    """That an identity source put a user in a team, so the source's next sync removes only its own."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_grants")
    team = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="identity_grants")
    source = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team", "source"], name="team_grant_once")]

    def __str__(self) -> str:
        return f"{self.source} → user {self.user_id} in team {self.team_id}"


class DirectoryAccount(models.Model):
    """That an account is an LDAP directory's user (by DN): the directory signs it in, and is asked
    whether the user is still there. An account without one is never signed in by the directory,
    so a directory user named like a local account does not get it."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_account"
    )
    dn = models.CharField(max_length=1000, unique=True, help_text="The user's DN, lowercase.")
    username = models.CharField(
        max_length=150,
        help_text="The name the directory's user search finds the user by (it may differ from the "
        "account's): the product searches it again to check that the user is still there.",
    )
    checked_at = models.DateTimeField(
        default=timezone.now, help_text="When the directory last confirmed the user."
    )

    class Meta:
        verbose_name = "directory account"

    def __str__(self) -> str:
        return self.dn

    def save(self, *args, **kwargs):
        self.dn = self.dn.lower()  # DNs compare without regard to case; a link typed in the admin too
        super().save(*args, **kwargs)


class ScimToken(models.Model):
    """A bearer token an identity provider's SCIM client sends (/scim/v2/). Only a SHA-256 hash of the
    secret is stored; the admin shows the secret once, when the token is made."""

    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'Entra ID production'.")
    source = models.SlugField(
        max_length=50,
        help_text='The identity provider it provisions for, e.g. "entra" or "okta": the users and groups '
        "a token makes belong to its source, and only tokens of that source see and change them.",
    )
    prefix = models.CharField(max_length=16, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Updated at most once a minute.")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Set when revoked; never cleared.")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "SCIM token"

    def __str__(self) -> str:
        return f"{self.name} ({self.source}, {self.prefix}…)"


class ScimAccount(models.Model):
    """That an account is provisioned by a SCIM source: only such accounts are SCIM's to read and
    change. ``deleted_at`` is a SCIM DELETE (the account stays, deactivated, for its documents)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim_account"
    )
    source = models.SlugField(max_length=50)
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SCIM account"

    def __str__(self) -> str:
        return f"{self.source}: user {self.user_id}"


class ScimGroup(models.Model):
    """That a team (auth group) was made by a SCIM source, which manages its members (TeamGrant
    source "scim:<source>")."""

    team = models.OneToOneField("auth.Group", on_delete=models.CASCADE, related_name="scim_group")
    source = models.SlugField(max_length=50)
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group"

    def __str__(self) -> str:
        return f"{self.source}: team {self.team_id}"


class SpentTotpCode(models.Model):
    """An authenticator app's code that was accepted once (a sign-in, a re-check, turning the app on),
    kept while the code is still valid so that it is refused if sent again (RFC 6238, 5.2).

    allauth keeps the same mark in the cache, which may evict it when full; a row is not evicted.
    Rows older than a code's life are deleted when the account spends its next code.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    code = models.CharField(max_length=16)
    spent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "code"], name="totp_code_spent_once")]

    def __str__(self) -> str:
        return f"a code of user {self.user_id} spent at {self.spent_at:%H:%M:%S}"
