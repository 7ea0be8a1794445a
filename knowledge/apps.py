from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import logging

        from django.db.models.signals import post_delete
        from django_q.signals import post_execute_in_worker, post_spawn, pre_execute

        from knowledge.models import Source
        from knowledge.source_fetch.readers import mirror_remove_on_commit
        from knowledge.worker_housekeeping import mark_busy, mark_idle, start_housekeeping
        from knowledge.worker_probes import QuietProbes

        # Each worker process django-q2 starts beats a heartbeat and sweeps for lost jobs;
        # the heartbeat says whether it runs a task (a busy cluster is not a stuck one).
        post_spawn.connect(start_housekeeping, dispatch_uid="knowledge-housekeeping")
        pre_execute.connect(mark_busy, dispatch_uid="knowledge-busy")
        post_execute_in_worker.connect(mark_idle, dispatch_uid="knowledge-idle")
        logging.getLogger("django-q").addFilter(QuietProbes())
        # However a source goes (removed, with its collection, with its owner), its mirror goes.
        post_delete.connect(mirror_remove_on_commit, sender=Source, dispatch_uid="knowledge-source-mirror")
