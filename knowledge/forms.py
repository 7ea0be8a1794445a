"""Forms that apply the access rules (knowledge.access) where the admin edits rows directly."""

from __future__ import annotations

from django import forms

from knowledge.access import collection_is_readable
from knowledge.models import ProfileCollection


class ProfileCollectionForm(forms.ModelForm):
    """A profile may only search collections its owner can read (the operator's profiles: any)."""

    class Meta:
        model = ProfileCollection
        fields = ["collection", "reranking"]

    def clean(self):
        cleaned = super().clean()
        collection = cleaned.get("collection")
        profile = self.instance.profile if self.instance.profile_id else None  # None: not saved yet
        if profile is not None and profile.owner_id is not None and collection is not None:
            if not collection_is_readable(user=profile.owner, collection=collection):
                self.add_error("collection", "The profile's owner cannot read this collection.")
        return cleaned
