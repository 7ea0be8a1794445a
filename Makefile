# The two commands of the README:
#   make run    install into .venv/ and start the application on its embedded defaults
#   make test   install into .venv/ and run the whole test suite
# Dependencies: requirements.lock pins every package with hashes (see README, "Upgrading").
#   make lock          re-resolve pyproject.toml into requirements.lock, keeping pins that still fit
#   make lock-upgrade  move every pin to the newest allowed release
SHELL := /bin/bash
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: run test install worker lock lock-upgrade

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	scripts/install.sh
	touch $(STAMP)

run: $(STAMP)
	scripts/run.sh

worker: $(STAMP)
	$(VENV)/bin/python manage.py knowledge_worker

test: $(STAMP)
	scripts/test.sh

lock:
	scripts/lock.sh

lock-upgrade:
	scripts/lock.sh --upgrade
