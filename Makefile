# The two commands of the README:
#   make run    install into .venv/ and start the application on its embedded defaults
#   make test   install into .venv/ and run the whole test suite
# Dependencies: requirements.lock pins every package with hashes (see docs/getting-started.md, "What gets installed, and upgrading").
#   make lock          re-resolve pyproject.toml into requirements.lock, keeping pins that still fit
#   make lock-upgrade  move every pin to the newest allowed release
# Documentation (MkDocs, docs/ and mkdocs.yml; see docs/about.md):
#   make docs          serve the site with live reload on http://127.0.0.1:8001/
#   make docs-build    build it into site/ with warnings as errors
SHELL := /bin/bash
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: run test install worker lock lock-upgrade docs docs-build

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml scripts/model_parts.lock
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

# NO_MKDOCS_2_WARNING: the theme's banner about a future MkDocs release is noise in every build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --clean --site-dir site
