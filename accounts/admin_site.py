"""The admin site: every ModelAdmin registered on it records its adds, changes and deletes.

``AuditedAdminSite.register`` puts ``AuditedModelAdmin`` in front of each admin class, so no
model (ours or a library's) can be changed through the admin unrecorded. Exactly one record per
change: when the admin calls a service that records the change itself (a document deleted
through ``document_delete``, a setting saved through ``global_setting_set``), the service's
record stands and the admin adds none (``audit_recorded``).

A ModelAdmin names its events with ``audit_name`` ("collection" gives collection.added ...)
and may rename a verb with ``audit_verbs``; without a name they are admin.added/changed/deleted.
"""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction

from accounts.audit import audit_changes, audit_record, audit_recorded

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

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # An admin whose save goes through a service may store another instance than ``obj``
        # (the document admin's upload): the saved one is the form's.
        obj = form.instance if form.instance.pk is not None else obj
        verbs = SAME_CHANGE["changed" if change else "added"]
        if audit_recorded(object_type=obj._meta.label_lower, object_id=obj.pk, verbs=verbs):
            return
        changes = form_changes(form, change=change)
        if change and not changes:
            return  # saved unchanged: nothing happened
        audit_record(action=self.audit_action("changed" if change else "added"), obj=obj, changes=changes)

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
            audit_record(action=action, object_type=label, object_id=pk, object_repr=shown)


def form_changes(form, *, change: bool) -> dict:
    """{field: [before, after]} of the form's changed fields; before is None when adding."""
    names = [name for name in form.changed_data if name in form.cleaned_data]
    before = {name: form.initial.get(name) for name in names} if change else {}
    return audit_changes(before, {name: form.cleaned_data[name] for name in names})


class AuditedAdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        base = admin_class or admin.ModelAdmin
        if not issubclass(base, AuditedModelAdmin):
            base = type(base.__name__, (AuditedModelAdmin, base), {"__module__": base.__module__})
        super().register(model_or_iterable, base, **options)
