"""The admin site: every ModelAdmin registered on it records its adds, changes and deletes.

``AuditedAdminSite.register`` puts ``AuditedModelAdmin`` in front of each admin class, so no
model (ours or a library's) can be changed through the admin unrecorded. Exactly one record per
change: when the admin calls a service that records the change itself (a document deleted
through ``document_delete``, a setting saved through ``global_setting_set``), the service's
record stands and the admin adds none (``audit_recorded``); a service's record of another kind
of change (collection.reindexed beside the admin's collection.changed) leaves out of the admin's
record only the fields it named (``audit_recorded_fields``).

Inline rows (a profile's collections) are recorded in the parent's event, one entry a row:
``{"<row's verbose name> <row>": [before, after]}``, each side a {field: value} or None (added,
deleted). An inline whose save records itself through a service (a collection's team shares)
sets ``audit_recorded`` on its formset and is left out.

A ModelAdmin names its events with ``audit_name`` ("collection" gives collection.added ...)
and may rename a verb with ``audit_verbs``; without a name they are admin.added/changed/deleted.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.db import transaction
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.audit import AuditSubject, audit_changes, audit_record, audit_recorded, audit_recorded_fields

# The verbs a service may record for what an admin calls added, changed or deleted: its record
# of the same change stands in for the admin's.
SAME_CHANGE = {
    "added": frozenset({"added", "created", "uploaded"}),
    "changed": frozenset({"changed", "locked"}),
    "deleted": frozenset({"deleted", "removed"}),
}


class AuditedModelAdmin:
    """Mixed in front of every registered ModelAdmin (see the module's docstring)."""

    # Read with getattr: this class comes first in the MRO, so attributes here would hide the admin's.
    def audit_action(self, verb: str) -> str:
        name = getattr(self, "audit_name", "admin")
        return f"{name}.{getattr(self, 'audit_verbs', {}).get(verb, verb)}"

    def save_related(self, request, form, formsets, change):
        """Records once the object and its inline rows are saved: Django calls this after save_model,
        on the change form and for the changelist's editable rows alike."""
        super().save_related(request, form, formsets, change)
        # An admin whose save goes through a service may store another instance than the one it was
        # given (the document admin's upload): the saved one is the form's.
        saved = form.instance
        if saved.pk is None or getattr(form, "audit_nothing_saved", False):
            return  # e.g. an upload of bytes already stored: nothing was added
        verb = "changed" if change else "added"
        if audit_recorded(object_type=saved._meta.label_lower, object_id=saved.pk, verbs=SAME_CHANGE[verb]):
            return
        covered = audit_recorded_fields(object_type=saved._meta.label_lower, object_id=saved.pk)
        changes = {
            name: values for name, values in form_changes(form, change=change).items() if name not in covered
        }
        changes.update(inline_changes(formsets))
        if change and not changes:
            return  # saved unchanged, or only what a service recorded: nothing more happened
        audit_record(action=self.audit_action(verb), obj=saved, changes=changes)

    def delete_model(self, request, obj):
        label, pk, shown = obj._meta.label_lower, obj.pk, str(obj)
        super().delete_model(request, obj)
        _record_deleted(self.audit_action("deleted"), label, [(pk, shown)])

    def delete_queryset(self, request, queryset):
        """The bulk "delete selected" action: one record per object, in the deleting transaction."""
        with transaction.atomic():
            doomed = [(obj.pk, str(obj)) for obj in queryset]
            super().delete_queryset(request, queryset)
            _record_deleted(self.audit_action("deleted"), queryset.model._meta.label_lower, doomed)


def _record_deleted(action: str, label: str, doomed: list[tuple]) -> None:
    for pk, shown in doomed:
        if not audit_recorded(object_type=label, object_id=pk, verbs=SAME_CHANGE["deleted"]):
            audit_record(action=action, obj=AuditSubject(object_type=label, object_id=pk, object_repr=shown))


def form_changes(form, *, change: bool) -> dict:
    """{field: [before, after]} of the form's changed fields; before is None when adding."""
    names = [name for name in form.changed_data if name in form.cleaned_data]
    before = {name: form.initial.get(name) for name in names} if change else {}
    return audit_changes(before, {name: form.cleaned_data[name] for name in names})


def inline_changes(formsets) -> dict:
    """{"<row's verbose name> <row>": [before, after]} of the inline rows added, changed or deleted;
    each side is the row's {field: value}, or None for a row added or deleted."""
    changes = {}
    for formset in formsets:
        if getattr(formset, "audit_recorded", False):
            continue  # its rows went through a service that recorded them
        name = formset.model._meta.verbose_name
        deleted = set(formset.deleted_forms) if formset.can_delete else set()
        for row in formset.forms:
            existing = row in formset.initial_forms
            if row in deleted and existing:
                changes[f"{name} {row.instance}"] = [_row_values(formset, row), None]
            elif row not in deleted and row.has_changed():
                fields = form_changes(row, change=existing)
                before = {k: v[0] for k, v in fields.items()} if existing else None
                changes[f"{name} {row.instance}"] = [before, {k: v[1] for k, v in fields.items()}]
    return changes


def _row_values(formset, row) -> dict:
    """A deleted row's fields as they were, without its id, its parent and the delete box."""
    left_out = {formset.model._meta.pk.name, "DELETE", getattr(formset.fk, "name", "")}
    return {name: row.initial.get(name) for name in row.fields if name not in left_out}


class AuditedAdminSite(admin.AdminSite):
    def login(self, request, extra_context=None):
        """Django's admin log-in (its form and page), signing in through the log-in page's flow
        (accounts.views.StagedLoginMixin), so an operator with a second factor is asked for it here too."""
        if request.method == "GET" and self.has_permission(request):
            return redirect("admin:index")
        from django.contrib.admin.forms import AdminAuthenticationForm  # imports models: not at load

        from accounts.views import AdminLoginView

        context = {
            **self.each_context(request),
            "title": _("Log in"),
            "subtitle": None,
            "app_path": request.get_full_path(),
            "username": request.user.get_username(),
        }
        if REDIRECT_FIELD_NAME not in request.GET and REDIRECT_FIELD_NAME not in request.POST:
            context[REDIRECT_FIELD_NAME] = reverse("admin:index", current_app=self.name)
        context.update(extra_context or {})
        request.current_app = self.name
        form = self.login_form or AdminAuthenticationForm
        template = self.login_template or "admin/login.html"
        view = AdminLoginView.as_view(extra_context=context, authentication_form=form, template_name=template)
        return view(request)

    def register(self, model_or_iterable, admin_class=None, **options):
        base = admin_class or admin.ModelAdmin
        if not issubclass(base, AuditedModelAdmin):
            base = type(base.__name__, (AuditedModelAdmin, base), {"__module__": base.__module__})
        super().register(model_or_iterable, base, **options)
