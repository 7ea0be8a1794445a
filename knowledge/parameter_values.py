"""Three-tier knowledge configuration: admin lock > profile override > global default.

The one place that resolves the value in force of every knowledge parameter
(declared and validated in knowledge.parameters) for a call: the global rows,
the admin's locks, the profile's overrides, the call's own overrides and ``k``.
Values are read from the database on every call, so a change takes effect on
the next request with no restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.audit import audit_changes, audit_record
from config.base.prepared import PreparedSelect
from knowledge.models import KnowledgeSetting
from knowledge.parameters import PARAMETERS, parameter, validate_overrides, validate_value

SOURCE_LOCKED = "locked"
SOURCE_PROFILE = "profile"
SOURCE_GLOBAL = "global"


@dataclass(frozen=True)
class EffectiveValue:
    value: Any
    source: str


# The stored rows' id, key, value and is_locked, with SQL built once: they are read on every
# retrieval, and compiling KnowledgeSetting.objects.all() and building its instances cost more CPU
# than the query.
_GLOBAL_ROWS = PreparedSelect(
    KnowledgeSetting, where="TRUE", order_by='"m"."key"', defer=("help_text", "updated_at")
)


def global_settings() -> dict[str, tuple[Any, bool]]:
    """Every parameter's global (value, is_locked); defaults for rows not yet stored."""
    stored = {key: (value, is_locked) for _, key, value, is_locked in _GLOBAL_ROWS.fetch_values()}
    return {key: stored.get(key, (spec.default, False)) for key, spec in PARAMETERS.items()}


def effective_config(
    *, profile=None, overrides: dict[str, Any] | None = None, k: int | None = None
) -> dict[str, EffectiveValue]:
    """Resolve every parameter: a locked global wins, then the call's override (``k`` is its
    ``maxDocs``), then the profile's override, then the global value.

    The call's overrides and ``k`` are validated here; the profile's were validated when stored.
    """
    merged = dict(profile.knowledge_overrides if profile else {})
    merged.update(validate_overrides(overrides or {}))
    if k is not None:
        merged["maxDocs"] = validate_value("maxDocs", k)
    effective = {}
    for key, (global_value, is_locked) in global_settings().items():
        if is_locked:
            effective[key] = EffectiveValue(global_value, SOURCE_LOCKED)
        elif merged.get(key) is not None:
            effective[key] = EffectiveValue(merged[key], SOURCE_PROFILE)
        else:
            effective[key] = EffectiveValue(global_value, SOURCE_GLOBAL)
    return effective


def effective_values(config: dict[str, EffectiveValue]) -> dict[str, Any]:
    return {key: item.value for key, item in config.items()}


def resolved_config(profile=None, overrides: dict[str, Any] | None = None, k: int | None = None) -> dict:
    """Every parameter's value in force for a call (``effective_config`` without the sources)."""
    return effective_values(effective_config(profile=profile, overrides=overrides, k=k))


@transaction.atomic
def global_setting_set(*, key: str, value: Any = None, lock: bool | None = None):
    """Change a global value and/or its lock, with the same validation as everywhere else."""
    spec = parameter(key)
    row, _ = KnowledgeSetting.objects.select_for_update().get_or_create(
        key=key, defaults={"value": spec.default, "help_text": spec.help_text}
    )
    before = {"value": row.value, "is_locked": row.is_locked}
    if value is not None:
        row.value = validate_value(key, value)
    if lock is not None:
        row.is_locked = lock
    row.help_text = spec.help_text
    row.save()
    changes = audit_changes(before, {"value": row.value, "is_locked": row.is_locked})
    if changes:  # a lock alone is its own event; a value (with or without the lock) a change
        audit_record(
            action="setting.changed" if "value" in changes else "setting.locked", obj=row, changes=changes
        )
    return row


def global_settings_ensure() -> None:
    """Store a row with the default for every declared parameter that has none."""
    for key, spec in PARAMETERS.items():
        KnowledgeSetting.objects.get_or_create(
            key=key, defaults={"value": spec.default, "help_text": spec.help_text}
        )
