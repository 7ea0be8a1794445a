"""Show the effective knowledge configuration, or change a global setting.

knowledge_config [--profile NAME] [--json]
knowledge_config --set KEY=VALUE [--set ...] [--lock | --unlock]
knowledge_config --lock KEY | --unlock KEY
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.audit import command_audited
from config.base.errors import KnowledgeError
from knowledge.models import Profile
from knowledge.parameter_values import effective_config, global_setting_set
from knowledge.parameters import ConfigError, parameter, validate_value
from knowledge.services.profiles import profile_find


class Command(BaseCommand):
    help = "Print the effective knowledge parameters (and their source) or change global settings."

    def add_arguments(self, parser):
        parser.add_argument("--profile", help="Resolve for this profile (name, tag or id).")
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE", help="Change a global value."
        )
        lock = parser.add_mutually_exclusive_group()
        lock.add_argument("--lock", nargs="?", const=True, metavar="KEY", help="Lock the --set keys, or KEY.")
        lock.add_argument(
            "--unlock", nargs="?", const=True, metavar="KEY", help="Unlock the --set keys, or KEY."
        )

    @command_audited
    def handle(self, *args, **options):
        try:
            changes = self._parse_sets(options["set"])
            lock, lock_keys = self._lock_request(options, changes)
            for key in lock_keys:
                parameter(key)  # refuse unknown names before anything is stored
            for key, raw in changes.items():
                validate_value(key, raw)  # all or nothing: one bad value stores none
            for key, raw in changes.items():
                global_setting_set(key=key, value=raw, lock=lock)
            for key in lock_keys - changes.keys():
                global_setting_set(key=key, lock=lock)
            profile = self._profile(options["profile"])
            config = effective_config(profile=profile)
        except (ConfigError, KnowledgeError) as exc:
            raise CommandError(str(exc)) from exc
        self._print(config, as_json=options["json"])

    def _parse_sets(self, items: list[str]) -> dict[str, str]:
        changes = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
            changes[key.strip()] = value
        return changes

    def _lock_request(self, options, changes) -> tuple[bool | None, set[str]]:
        for flag, state in (("lock", True), ("unlock", False)):
            value = options[flag]
            if value is True:
                if not changes:
                    raise ConfigError(f"--{flag} needs a KEY, or --set KEY=VALUE")
                return state, set(changes)
            if isinstance(value, str):
                return state, {value}
        return None, set()

    def _profile(self, ref: str | None) -> Profile | None:
        return profile_find(ref) if ref else None

    def _print(self, config, *, as_json: bool) -> None:
        if as_json:
            payload = {key: {"value": item.value, "source": item.source} for key, item in config.items()}
            self.stdout.write(json.dumps(payload))
            return
        width = max(len(key) for key in config)
        for key, item in config.items():
            self.stdout.write(f"{key:<{width}}  {json.dumps(item.value):<12}  {item.source}")
