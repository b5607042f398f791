# TARSy: `make run` serves the embedded default; `make test` runs the test suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test test-fast lint typecheck check-config migrate clean

$(VENV)/.runtime: requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check -r requirements.txt -c constraints.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt $(VENV)/.runtime
	$(PIP) install -q --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	touch $@

migrate: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput -v 0

run: migrate
	$(PY) manage.py serve

test: $(VENV)/.dev
	$(PY) -m pytest $(PYTEST_ARGS)

# The unit tests: no database, broker or browser.
test-fast: $(VENV)/.dev
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

# ruff, then the layer rules (import-linter contracts in pyproject.toml).
lint: $(VENV)/.dev
	$(VENV)/bin/ruff check agents controllers tarsy tests evals
	$(VENV)/bin/lint-imports

# The paths it checks and the per-module exceptions are in pyproject.toml ([tool.mypy]).
typecheck: $(VENV)/.dev
	SECRET_KEY=$${SECRET_KEY:-typecheck-only} $(VENV)/bin/mypy

check-config: $(VENV)/.runtime
	$(PY) manage.py check_config --config-dir deploy/config

clean:
	rm -rf $(VENV) var .pytest_cache .import_linter_cache
