from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from knowledge.worker_housekeeping import start_housekeeping

        # Each worker process django-q2 starts beats a heartbeat and sweeps for lost jobs.
        post_spawn.connect(start_housekeeping, dispatch_uid="knowledge-housekeeping")
