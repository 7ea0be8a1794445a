"""Admin for stored evaluation sets and runs: compare runs side by side, compare two chunk profiles.

Imported by knowledge/admin/__init__.py. Actions and forms call the services in
knowledge.evaluation.store.
"""

from __future__ import annotations

import base64

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from config.base.validation import id_or_none
from knowledge.evaluation.store import eval_chunk_profiles_compare, eval_run_start, eval_runs_chart_svg
from knowledge.models import ChunkProfile, Collection, EvalQuestion, EvalRun, EvalSet

COMPARE_TEMPLATE = "admin/knowledge/evalrun_compare.html"
START_TEMPLATE = "admin/knowledge/evalrun_start.html"


class EvalQuestionInline(admin.TabularInline):
    model = EvalQuestion
    fields = ["external_id", "question", "expected_sources", "answer", "kind"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False  # questions come from an import (knowledge_eval_import / knowledge_eval --store)


@admin.register(EvalSet)
class EvalSetAdmin(admin.ModelAdmin):
    list_display = ["name", "question_count", "created_at"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_at"]
    inlines = [EvalQuestionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_questions=Count("questions", distinct=True))

    @admin.display(ordering="_questions", description="questions")
    def question_count(self, obj):
        return obj._questions


class CompareProfilesForm(forms.Form):
    eval_set = forms.ModelChoiceField(EvalSet.objects.all())
    collection = forms.ModelChoiceField(Collection.objects.select_related("owner"))
    chunk_profile_a = forms.ModelChoiceField(ChunkProfile.objects.all(), label="Chunk profile A")
    chunk_profile_b = forms.ModelChoiceField(ChunkProfile.objects.all(), label="Chunk profile B")
    k = forms.IntegerField(min_value=1, max_value=100, initial=10)

    def clean(self):
        data = super().clean()
        if data.get("chunk_profile_a") and data.get("chunk_profile_a") == data.get("chunk_profile_b"):
            raise forms.ValidationError("Choose two different chunk profiles.")
        return data


class StartRunForm(forms.Form):
    eval_set = forms.ModelChoiceField(EvalSet.objects.all(), label="Evaluation set")
    collection = forms.ModelChoiceField(
        Collection.objects.select_related("owner"), help_text="Searched as its owner sees it."
    )
    k = forms.IntegerField(
        min_value=1,
        max_value=100,
        initial=10,
        label="Passages per question (k)",
        help_text="recall@k and nDCG@k",
    )


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "eval_set",
        "collection",
        "chunk_profile",
        "k",
        "settings",
        "recall_at_5",
        "mrr",
        "ndcg_at_10",
        "created_at",
    ]
    list_filter = ["eval_set", "chunk_profile", "with_answers"]
    list_select_related = ["eval_set", "collection", "profile", "chunk_profile", "created_by"]
    search_fields = ["eval_set__name", "collection__name"]
    raw_id_fields = ["collection", "profile", "created_by"]
    readonly_fields = [
        "eval_set",
        "collection",
        "profile",
        "chunk_profile",
        "k",
        "settings",
        "with_answers",
        "metrics",
        "created_at",
        "created_by",
    ]
    actions = ["compare_runs"]

    def has_add_permission(self, request):
        return False  # runs are recorded by knowledge_eval --store or the compare form

    @admin.display(description="recall@5")
    def recall_at_5(self, obj):
        return _number(obj.metrics.get("recall@5"))

    @admin.display(description="MRR")
    def mrr(self, obj):
        return _number(obj.metrics.get("mrr"))

    @admin.display(description="nDCG@10")
    def ndcg_at_10(self, obj):
        return _number(obj.metrics.get("ndcg@10"))

    @admin.action(description="Compare selected runs")
    def compare_runs(self, request, queryset):
        return self._compare_page(request, list(queryset.order_by("pk")), CompareProfilesForm())

    def get_urls(self):
        compare = path(
            "compare/", self.admin_site.admin_view(self.compare_view), name="knowledge_evalrun_compare"
        )
        start = path("start/", self.admin_site.admin_view(self.start_view), name="knowledge_evalrun_start")
        return [compare, start, *super().get_urls()]

    def start_view(self, request):
        """GET shows the form; POST queues the run for a worker and returns to the list."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        form = StartRunForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            eval_run_start(
                eval_set=data["eval_set"], collection=data["collection"], k=data["k"], created_by=request.user
            )
            self.message_user(
                request,
                f"Evaluation of {data['eval_set'].name} on {data['collection'].name} started. It "
                "appears in this list when it finishes; if it fails, the reason is under "
                "Background tasks › Failed tasks.",
                messages.SUCCESS,
            )
            return HttpResponseRedirect(reverse("admin:knowledge_evalrun_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Run an evaluation",
            "form": form,
        }
        return TemplateResponse(request, START_TEMPLATE, context)

    def compare_view(self, request):
        """GET ?ids=1,2 shows stored runs; POST runs the two-profile comparison and shows its runs."""
        if request.method != "POST":
            ids = [i for i in map(id_or_none, request.GET.get("ids", "").split(",")) if i is not None]
            runs = list(self.get_queryset(request).filter(pk__in=ids).order_by("pk"))
            return self._compare_page(request, runs, CompareProfilesForm())
        if not self.has_change_permission(request):
            raise PermissionDenied
        form = CompareProfilesForm(request.POST)
        runs = []
        if form.is_valid():
            runs = self._compare_profiles(request, form.cleaned_data)
        return self._compare_page(request, runs, form)

    def _compare_profiles(self, request, data) -> list[EvalRun]:
        collection = data["collection"]
        runs = eval_chunk_profiles_compare(
            eval_set=data["eval_set"],
            collection=collection,
            chunk_profiles=[data["chunk_profile_a"], data["chunk_profile_b"]],
            user=collection.owner or request.user,
            k=data["k"],
            created_by=request.user,
        )
        if len(runs) < 2:
            self.message_user(
                request,
                f"Recorded {len(runs)} run(s): a chunk profile without chunks in {collection} was skipped.",
                messages.WARNING,
            )
        return runs

    def _compare_page(self, request, runs, form):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Compare evaluation runs",
            "runs": runs,
            "rows": compare_rows(runs),
            "chart": _svg_image_source(eval_runs_chart_svg(runs)) if runs else "",
            "form": form,
            "form_action": reverse("admin:knowledge_evalrun_compare"),
        }
        return TemplateResponse(request, COMPARE_TEMPLATE, context)


def _svg_image_source(svg: str) -> str:
    """The chart as an <img> source: matplotlib's SVG carries inline styles, which the page's
    Content-Security-Policy refuses in the page itself but not inside an image."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def compare_rows(runs) -> list[tuple[str, list[str]]]:
    """One row per metric (overall, then by kind, then latency), one cell per run."""
    flat = [dict(_flatten(run.metrics)) for run in runs]
    keys = dict.fromkeys(key for values in flat for key in values)
    return [(key, [_number(values.get(key)) for values in flat]) for key in keys]


def _flatten(metrics: dict, prefix: str = ""):
    for key, value in metrics.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key} / ")
        elif not isinstance(value, list):
            yield f"{prefix}{key}", value


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
