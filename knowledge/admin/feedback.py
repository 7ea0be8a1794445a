"""Admin for rated answers: the question, the answer and its sources with the asker's rating and comment.

Imported by knowledge/admin/__init__.py. The export action calls knowledge.evaluation.feedback, as
``knowledge_eval_import --from-feedback`` does.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from config.base.errors import KnowledgeError
from knowledge.evaluation.feedback import feedback_eval_set_import
from knowledge.models import ChatTurn, RatedAnswer


@admin.register(RatedAnswer)
class RatedAnswerAdmin(admin.ModelAdmin):
    list_display = ["rating_badge", "question", "answer_start", "source_list", "feedback_comment", "asker"]
    list_display_links = ["question"]
    list_filter = ["feedback_rating", "mode"]
    list_select_related = ["session", "session__user"]
    search_fields = ["question", "answer", "feedback_comment", "session__user__username"]
    readonly_fields = [
        "session",
        "index",
        "question",
        "resolved_question",
        "answer",
        "source_list",
        "feedback_rating",
        "feedback_comment",
        "feedback_at",
        "llm_model",
    ]
    fields = readonly_fields
    actions = ["export_as_question_set"]

    class Media:
        css = {"all": ["css/admin_knowledge.css"]}

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(feedback_rating="")

    def has_add_permission(self, request):
        return False  # ratings come from the askers, on the chat page or through the API

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="rating", ordering="feedback_rating")
    def rating_badge(self, obj):
        helpful = obj.feedback_rating == ChatTurn.Rating.UP
        return format_html(
            '<span class="rating rating-{}">{}</span>',
            obj.feedback_rating,
            "helpful" if helpful else "not helpful",
        )

    @admin.display(description="answer")
    def answer_start(self, obj):
        return obj.answer if len(obj.answer) <= 300 else obj.answer[:299] + "…"

    @admin.display(description="sources")
    def source_list(self, obj):
        rows = (
            (c.get("n"), c.get("title") or c.get("document"), c.get("source_ref")) for c in obj.cited_sources
        )
        return format_html_join("", "<div>[{}] {} · {}</div>", rows) or "—"

    @admin.display(description="asked by", ordering="session__user__username")
    def asker(self, obj):
        return obj.session.user.username

    @admin.action(description="Export the helpful ones as an evaluation question set")
    def export_as_question_set(self, request, queryset):
        helpful = queryset.filter(feedback_rating=ChatTurn.Rating.UP).order_by("-feedback_at")
        name = f"feedback {timezone.now():%Y-%m-%d %H:%M}"
        try:
            eval_set, count = feedback_eval_set_import(name=name, turns=helpful)
        except KnowledgeError as exc:
            self.message_user(request, str(exc), level=messages.ERROR)
            return
        self.message_user(request, f"Stored {count} question(s) as the evaluation set “{eval_set.name}”.")
