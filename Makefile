# The two commands of the README:
#   make run    install into .venv/ and start the application on its embedded defaults
#   make test   install into .venv/ and run the whole test suite
SHELL := /bin/bash
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: run test install worker

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	scripts/install.sh
	touch $(STAMP)

run: $(STAMP)
	scripts/run.sh

worker: $(STAMP)
	$(VENV)/bin/python manage.py qcluster

test: $(STAMP)
	scripts/test.sh
