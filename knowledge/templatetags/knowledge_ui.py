"""Template filters the pages share."""

from django import template

from knowledge.retrieval.passages import source_label, source_place

register = template.Library()

register.filter("source_label", source_label)
register.filter("source_place", source_place)


_SPLITS = {
    "paragraph": "split at paragraph breaks into passages of up to about {size} characters",
    "sentence": "split at sentence ends into passages of up to about {size} characters",
    "fixed": "cut into passages of {size} characters",
    "semantic": "split at headings into passages of up to about {size} tokens (word pieces)",
}


@register.filter
def chunk_profile_words(profile) -> str:
    """How a chunk profile cuts documents for search, in a sentence a user understands."""
    if profile is None:
        return ""
    unit = "tokens" if profile.strategy == "semantic" else "characters"
    split = _SPLITS.get(profile.strategy, "split into passages of about {size} " + unit)
    overlap = (
        f", each repeating the last {profile.chunk_overlap} {unit} of the one before"
        if profile.chunk_overlap
        else ""
    )
    return "Documents are " + split.format(size=f"{profile.chunk_size:,}") + overlap + "."
