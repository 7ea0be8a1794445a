"""Operator admin for the content models (settings, collections, documents, profiles, sharing, chat). Actions
call the same services as pages and API."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Case, OuterRef, Value, When
from django.utils.html import format_html

from accounts.throttles import user_throttle_charge
from config.base.errors import KnowledgeError, RateLimitedError
from knowledge.admin.releases import releases_table, rollback
from knowledge.clients.embedding_registry import MINILM, embedding_model_choices
from knowledge.forms import ProfileCollectionForm
from knowledge.models import (
    ChatSession,
    ChatTurn,
    Chunk,
    Collection,
    CollectionShare,
    Document,
    DocumentSummary,
    KnowledgeSetting,
    LinkGrant,
    Profile,
    ProfileCollection,
    Subscription,
)
from knowledge.parameter_values import global_setting_set
from knowledge.parameters import (
    ConfigError,
    parameter,
    parameter_order,
    parameter_words,
    validate_value,
    value_in_words,
)
from knowledge.services.collections import (
    chunk_profile_default,
    collection_access_changed,
    collection_reindex,
)
from knowledge.services.documents import (
    DocumentUpload,
    document_delete,
    document_reindex,
    document_retry,
    document_upload,
)
from knowledge.services.marketplace import (
    subscriptions_reinstate_as_operator,
    subscriptions_revoke_as_operator,
)
from knowledge.services.queries import count_subquery
from knowledge.services.teams import collection_share_record


def _charged(model_admin, request, scope: str, amount: int = 1) -> bool:
    """The operator's action counts like a page's or the API's, one per selected row; refused (over the
    rate, or more rows than it allows at all), it says why and does nothing."""
    try:
        user_throttle_charge(user=request.user, scope=scope, amount=amount)
    except KnowledgeError as exc:
        model_admin.message_user(request, str(exc), messages.ERROR)
        return False
    return True


def _typed_value_field(spec) -> forms.Field:
    """The form field a parameter's type asks for: a checkbox for a switch, a number box with the
    parameter's range for a number, a text area for text."""
    if spec.kind is bool:
        return forms.BooleanField(required=False)
    if spec.kind is int:
        return forms.IntegerField(min_value=spec.minimum, max_value=spec.maximum)
    if spec.kind is float:
        return forms.FloatField(
            min_value=spec.minimum, max_value=spec.maximum, widget=forms.NumberInput(attrs={"step": "any"})
        )
    return forms.CharField(
        required=False, strip=False, max_length=spec.max_length, widget=forms.Textarea(attrs={"rows": 6})
    )


class KnowledgeSettingForm(forms.ModelForm):
    """The value in the input its type asks for, labelled in words, checked by the parameter's own rules."""

    class Meta:
        model = KnowledgeSetting
        fields = ["value", "is_locked"]
        labels = {"is_locked": "Lock for everyone"}
        help_texts = {
            "is_locked": "Locked, this value applies to every user and profile; their own values are "
            "not used (each user's profile page says so)."
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        spec = parameter(self.instance.key)
        _, label, text = parameter_words(spec.key)
        field = _typed_value_field(spec)
        field.label = label
        field.help_text = text if text == spec.help_text else f"{text} ({spec.help_text})"
        self.fields["value"] = field
        self.initial["value"] = self.instance.value

    def clean_value(self):
        try:
            return validate_value(self.instance.key, self.cleaned_data["value"])
        except ConfigError as exc:
            raise forms.ValidationError(str(exc)) from exc


class LockFilter(admin.SimpleListFilter):
    title = "lock"
    parameter_name = "is_locked__exact"

    def lookups(self, request, model_admin):
        return [("1", "locked for everyone"), ("0", "users may change it")]

    def queryset(self, request, queryset):
        if self.value() in ("0", "1"):
            return queryset.filter(is_locked=self.value() == "1")
        return queryset


@admin.register(KnowledgeSetting)
class KnowledgeSettingAdmin(admin.ModelAdmin):
    """The settings by name in words, their value, whether the operator locked them and what they do;
    each opens a form with the input its type asks for. A locked value wins over every profile."""

    list_display = ["setting", "value_shown", "lock_badge", "description"]
    list_display_links = ["setting"]
    list_filter = [LockFilter]
    fields = ["value", "is_locked", "key", "updated_at"]
    readonly_fields = ["key", "updated_at"]
    form = KnowledgeSettingForm
    search_fields = ["key"]
    audit_name = "setting"  # accounts.admin_site names this admin's audit events after it

    class Media:
        css = {"all": ["css/admin_knowledge.css"]}

    def get_queryset(self, request):
        """In the profile page's order: by group (what an answer draws on first), then as declared."""
        order = {key: position for position, key in enumerate(parameter_order())}
        position = Case(
            *(When(key=key, then=Value(n)) for key, n in order.items()), default=Value(len(order))
        )
        return super().get_queryset(request).annotate(_position=position).order_by("_position", "key")

    @admin.display(description="setting", ordering="_position")
    def setting(self, obj):
        group, label, _ = parameter_words(obj.key)
        return format_html('{}<div class="setting-group">{}</div>', label, group)

    @admin.display(description="value")
    def value_shown(self, obj):
        return value_in_words(obj.key, obj.value)

    @admin.display(description="lock", ordering="is_locked")
    def lock_badge(self, obj):
        if not obj.is_locked:
            return format_html('<span class="lock-badge unlocked">{}</span>', "users may change it")
        return format_html('<span class="lock-badge locked">{}</span>', "locked for everyone")

    @admin.display(description="what it does")
    def description(self, obj):
        return parameter_words(obj.key)[2]

    def has_add_permission(self, request):
        return False  # the parameters are declared in code; rows exist for each

    def save_model(self, request, obj, form, change):
        """Through the service the command uses too: it validates and records setting.changed/locked."""
        global_setting_set(key=obj.key, value=form.cleaned_data["value"], lock=form.cleaned_data["is_locked"])

    def has_delete_permission(self, request, obj=None):
        return False


class CollectionAdminForm(forms.ModelForm):
    """A collection added here, or a new embedding model (a re-index), counts against the operator's
    write rate, as on the pages and the API.

    The embedding model is chosen from the registry; on an existing collection a new choice
    starts a re-embed (CollectionAdmin.save_model) instead of relabelling the stored vectors.
    """

    embedding_model = forms.ChoiceField(
        choices=embedding_model_choices,
        initial=MINILM,
        required=False,
        help_text="Empty: the default model (KNOWLEDGE_EMBEDDING_MODEL). A change re-embeds every document.",
    )

    def clean(self):
        cleaned = super().clean()
        if self._writes() and not self.errors:  # a refused form writes nothing: no charge
            try:
                user_throttle_charge(user=self.user, scope="writes")
            except RateLimitedError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return cleaned

    def _writes(self) -> bool:
        """A new collection, or a new embedding model (a re-index: one write, as on the API)."""
        if self.instance.pk is None:
            return True
        return "embedding_model" in self.changed_data and bool(self.cleaned_data.get("embedding_model"))


class CollectionShareInline(admin.TabularInline):
    """Teams (groups) the collection is shared with; memberships are the groups' own admin pages."""

    model = CollectionShare
    fields = ["group", "can_write", "created_by", "created_at"]
    readonly_fields = ["created_by", "created_at"]
    autocomplete_fields = ["group"]
    extra = 0


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    form = CollectionAdminForm
    inlines = [CollectionShareInline]
    list_display = [
        "name",
        "owner",
        "visibility",
        "listed",
        "chunk_profile",
        "embedding_model",
        "document_count",
        "chunk_count",
        "updated_at",
    ]
    list_filter = ["visibility", "listed", "chunk_profile", "embedding_model"]
    list_select_related = ["owner", "chunk_profile"]
    search_fields = ["name", "description", "owner__username"]
    raw_id_fields = ["owner"]
    readonly_fields = [
        "pending_chunk_profile",
        "pending_embedding_model",
        "reindex_error",
        releases_table,
        "created_at",
        "updated_at",
    ]
    actions = ["reindex_under_active_profile", rollback]
    audit_name, audit_verbs = "collection", {"added": "created"}

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        form.user = request.user  # whose write count an added collection charges
        return form

    def save_model(self, request, obj, form, change):
        new_model = None
        if change and "embedding_model" in form.changed_data:
            # The stored vectors are the old model's: keep it until the re-embed has replaced them.
            new_model, obj.embedding_model = obj.embedding_model, form.initial["embedding_model"]
        super().save_model(request, obj, form, change)
        if change:  # what the change takes away, as when the owner changes it (collection_update)
            access = [name for name in ("listed", "visibility") if name in form.changed_data]
            collection_access_changed(collection=obj, before={name: form.initial[name] for name in access})
        if new_model:  # an emptied field changes nothing
            queued = collection_reindex(collection=obj, embedding_model=new_model, actor=request.user)
            self.message_user(request, f"Queued {queued} document(s) for re-embedding with {new_model}.")

    def save_formset(self, request, form, formset, change):
        """Team shares given, changed or stopped here are audited as on the page and the API."""
        if formset.model is CollectionShare:
            formset.audit_recorded = True  # accounts.admin_site: recorded here, not in collection.changed
        for share in formset.save(commit=False):
            before = None
            if isinstance(share, CollectionShare):
                before = _stored_access(share)
                if share.pk is None:
                    share.created_by = request.user
            share.save()
            if isinstance(share, CollectionShare):
                collection_share_record(
                    collection=share.collection, group=share.group, before=before, after=share.can_write
                )
        for gone in formset.deleted_objects:
            if isinstance(gone, CollectionShare):
                collection_share_record(
                    collection=gone.collection, group=gone.group, before=gone.can_write, after=None
                )
            gone.delete()
        formset.save_m2m()

    def get_readonly_fields(self, request, obj=None):
        # Changing the profile of a collection with chunks goes through a re-index.
        return [*self.readonly_fields, "chunk_profile"] if obj else self.readonly_fields

    @admin.action(description="Re-index under the active chunk profile")
    def reindex_under_active_profile(self, request, queryset):
        if not _charged(self, request, "writes", amount=queryset.count()):
            return
        profile = chunk_profile_default()
        queued = sum(
            collection_reindex(collection=c, chunk_profile=profile, actor=request.user) for c in queryset
        )
        self.message_user(request, f"Queued {queued} document(s) for re-indexing under {profile.name}.")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                _documents=count_subquery(
                    Document.objects.filter(collection=OuterRef("pk")), group_by="collection"
                ),
                _chunks=count_subquery(
                    Chunk.objects.filter(
                        collection=OuterRef("pk"),
                        chunk_profile=OuterRef("chunk_profile"),
                        embedding_model=OuterRef("embedding_model"),
                    ),
                    group_by="collection",
                ),
            )
        )

    @admin.display(ordering="_documents", description="documents")
    def document_count(self, obj):
        return obj._documents

    @admin.display(ordering="_chunks", description="chunks (active profile)")
    def chunk_count(self, obj):
        return obj._chunks


class DocumentUploadForm(forms.ModelForm):
    """The admin's upload path: the file goes through the same service as every other."""

    upload = forms.FileField(help_text="PDF, DOCX, PPTX, XLSX, CSV, HTML, Markdown, text or OpenAPI.")

    class Meta:
        model = Document
        fields = ["collection", "title", "author", "category", "tags", "source_date"]

    def clean(self):
        cleaned = super().clean()
        upload, collection = cleaned.get("upload"), cleaned.get("collection")
        if upload and collection:
            try:
                user_throttle_charge(user=self.user, scope="uploads")
                self.result = document_upload(
                    collection=collection,
                    upload=DocumentUpload(
                        filename=upload.name,
                        data=upload.read(),
                        title=cleaned.get("title") or "",
                        author=cleaned.get("author") or "",
                        category=cleaned.get("category") or "",
                        tags=cleaned.get("tags") or [],
                        source_date=cleaned.get("source_date"),
                    ),
                )
            except KnowledgeError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return cleaned


class DocumentSummaryInline(admin.StackedInline):
    """The router's summary, made at ingestion; read-only (re-index the document to remake it)."""

    model = DocumentSummary
    can_delete = False
    extra = 0
    max_num = 0
    fields = readonly_fields = [
        "document_type",
        "summary",
        "key_topics",
        "use_for",
        "method",
        "model",
        "note",
        "updated_at",
    ]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    actions = ["retry_documents", "reindex_documents"]
    audit_name, audit_verbs = "document", {"added": "uploaded"}  # uploads and deletes record themselves
    list_display = ["display_title", "filename", "collection", "status", "progress", "size", "created_at"]
    list_filter = ["status", "collection"]
    list_select_related = ["collection"]
    search_fields = ["title", "filename", "author", "content_hash"]
    raw_id_fields = ["collection", "uploaded_by", "replaces"]
    readonly_fields = [
        "file",  # replacing the bytes here would skip type detection and processing: upload anew
        "content_hash",
        "size",
        "content_type",
        "status",
        "error",
        "sections_total",
        "sections_done",
        "chunks_total",
        "chunks_done",
        "created_at",
        "updated_at",
        "processed_at",
    ]

    def get_inlines(self, request, obj=None):
        return [DocumentSummaryInline] if obj is not None else []

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = DocumentUploadForm
        form = super().get_form(request, obj, **kwargs)
        form.user = request.user  # whose upload count it charges
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["collection", "upload", "title", "author", "category", "tags", "source_date"]
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj else []

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        form.instance = form.result.document  # stored (or found) by document_upload
        if not form.result.created:
            form.audit_nothing_saved = True  # accounts.admin_site records no upload then
            self.message_user(request, "These bytes were already in the collection.", messages.WARNING)

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    @admin.action(description="Retry the selected failed documents")
    def retry_documents(self, request, queryset):
        if not _charged(self, request, "writes", amount=queryset.count()):
            return
        retried = 0
        for document in queryset.exclude(status=Document.Status.READY):
            document_retry(document=document)
            retried += 1
        self.message_user(request, f"Queued {retried} document(s) for processing.")

    @admin.action(description="Re-index the selected documents")
    def reindex_documents(self, request, queryset):
        if not _charged(self, request, "writes", amount=queryset.count()):
            return
        for document in queryset:
            document_reindex(document=document)
        self.message_user(request, f"Queued {queryset.count()} document(s) for re-indexing.")

    def delete_model(self, request, obj):
        document_delete(document=obj)

    def delete_queryset(self, request, queryset):
        for document in queryset:
            document_delete(document=document)

    @admin.display(description="progress")
    def progress(self, obj):
        if obj.chunks_total:
            return f"{obj.chunks_done}/{obj.chunks_total} chunks"
        if obj.sections_total:
            return f"{obj.sections_done}/{obj.sections_total} sections"
        return ""


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["document", "index", "source_ref", "token_count", "chunk_profile", "embedding_model"]
    list_filter = ["chunk_profile", "embedding_model"]
    list_select_related = ["document", "chunk_profile"]
    search_fields = ["source_ref", "element_id", "document__filename"]
    raw_id_fields = ["document", "collection"]
    exclude = ["embedding", "search_vector"]
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name not in {"embedding", "search_vector"}]

    def has_add_permission(self, request):
        return False  # chunks are written by the ingestion pipeline only


class ProfileCollectionInline(admin.TabularInline):
    model = ProfileCollection
    form = ProfileCollectionForm
    raw_id_fields = ["collection"]
    extra = 1


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "tag", "owner", "profile_type", "updated_at"]
    list_select_related = ["owner"]
    search_fields = ["name", "tag", "owner__username"]
    raw_id_fields = ["owner"]
    inlines = [ProfileCollectionInline]


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    """Read-only rows; access changes only through the actions, which call the owners' services
    (an edited or added row would skip their lock and the share-link grant they drop)."""

    list_display = ["user", "collection", "is_active", "revoked_at", "created_at"]
    list_filter = ["is_active", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user", "collection"]
    raw_id_fields = ["user", "collection"]
    search_fields = ["user__username", "collection__name"]
    readonly_fields = ["user", "collection", "is_active", "revoked_at", "created_at", "updated_at"]
    actions = ["revoke", "reinstate"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # a deleted revoked row would let its user subscribe afresh: revoke instead

    @admin.action(description="Revoke (they stay out, share link included, until reinstated)")
    def revoke(self, request, queryset):
        count = subscriptions_revoke_as_operator(subscription_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"Revoked {count} subscription(s).")

    @admin.action(description="Reinstate")
    def reinstate(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        count = subscriptions_reinstate_as_operator(subscription_ids=ids)
        self.message_user(request, f"Reinstated {count} subscription(s).")


@admin.register(LinkGrant)
class LinkGrantAdmin(admin.ModelAdmin):
    """Who opened which share link; deleting a row takes that reader's link access away.

    Grants are only made by opening the link (``collection_link_open``), which checks revocations.
    """

    list_display = ["user", "collection", "created_at"]
    list_select_related = ["user", "collection"]
    raw_id_fields = ["user", "collection"]
    search_fields = ["user__username", "collection__name"]
    readonly_fields = ["user", "collection", "created_at"]

    def has_add_permission(self, request):
        return False


class ChatTurnInline(admin.StackedInline):
    model = ChatTurn
    extra = 0
    can_delete = False
    readonly_fields = [f.name for f in ChatTurn._meta.fields]


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user", "profile", "input_tokens", "output_tokens", "updated_at"]
    list_select_related = ["user", "profile"]
    raw_id_fields = ["user", "profile"]
    search_fields = ["title", "user__username"]
    inlines = [ChatTurnInline]


@admin.register(ChatTurn)
class ChatTurnAdmin(admin.ModelAdmin):
    list_display = ["__str__", "session", "mode", "input_tokens", "output_tokens", "created_at"]
    list_filter = ["mode", "created_at"]
    list_select_related = ["session"]
    raw_id_fields = ["session"]
    search_fields = ["question", "answer"]


def _stored_access(share: CollectionShare) -> bool | None:
    """The share's stored can_write before this save; None for a new share."""
    if share.pk is None:
        return None
    return CollectionShare.objects.filter(pk=share.pk).values_list("can_write", flat=True).first()
