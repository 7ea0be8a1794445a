"""The background worker as `make run` starts it: django-q2's cluster under the supervisor."""

from django.core.management.base import BaseCommand

from knowledge.worker_supervisor import supervise


class Command(BaseCommand):
    help = (
        "Run the task cluster (manage.py qcluster), replace it when it takes no task although a "
        "worker is idle, and stop it within KNOWLEDGE_WORKER_STOP_SECONDS of SIGTERM or SIGINT."
    )

    def handle(self, *args, **options):
        supervise()
