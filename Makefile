# qmon: `make demo` and `make test` are the two commands a new user needs (see README).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

.PHONY: help setup servers demo test test-fast lint format typecheck docs dashboard ci bench bench-scale bench-soak wheel dist clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "qmon needs Python 3.11 or later")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dev,docs]'
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install qmon (editable) with test, dev (ruff, mypy) and docs (mkdocs) dependencies

# Prometheus and Alertmanager for the tests that run the real servers (Debian packages; installed when
# missing and this runs as root with apt-get; otherwise those tests skip and say why)
servers: ## install Prometheus and Alertmanager (Debian packages) if missing and possible
	@if command -v prometheus >/dev/null && command -v prometheus-alertmanager >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing prometheus and prometheus-alertmanager (apt-get)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus prometheus-alertmanager >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus prometheus-alertmanager >/dev/null 2>&1; } || \
		echo "could not install prometheus / prometheus-alertmanager: their tests will be skipped"; \
	else echo "prometheus / prometheus-alertmanager not installed (needs root and apt-get): their tests will be skipped"; fi

demo: setup ## set up, then run the demo: local Kafka broker, live workload, the job (Ctrl-C stops)
	$(VENV)/bin/qmon demo $(if $(DURATION),--duration $(DURATION))

test: setup servers ## set up, then run the whole test suite (real Kafka broker, real Spark, Prometheus, Alertmanager)
	$(VENV)/bin/pytest

test-fast: setup ## only the pure-logic unit tests (no Spark, no Kafka, no schema registry)
	$(VENV)/bin/pytest -m "not spark and not kafka and not registry"

SOURCES := qmon streaming connectors tests benchmarks deploy

lint: setup ## ruff (lint rules, formatting) and import-linter (the layers; see pyproject.toml)
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	$(VENV)/bin/lint-imports

wheel: setup ## build the wheel into dist/ (what docker/Dockerfile installs)
	$(PY) -m pip wheel --no-deps --quiet . -w dist

# PYTHON=/usr/bin/python3.11 (say): the archive's bin/python links to the interpreter at that path, which every
# host that runs it needs (docs/guides/cluster.md)
dist: wheel ## the wheel and dist/qmon-env.tar.gz: qmon and its dependencies in a packed virtualenv, for spark-submit --archives
	$(PY) deploy/pack_env.py dist/qmon-$(VERSION)-py3-none-any.whl dist/qmon-env.tar.gz --python $(PYTHON)

format: setup ## ruff: format the code and apply the safe lint fixes
	$(VENV)/bin/ruff format $(SOURCES)
	$(VENV)/bin/ruff check --fix $(SOURCES)

typecheck: setup ## mypy (with the pydantic plugin) over the whole project, as configured in pyproject.toml
	$(VENV)/bin/mypy

# (in CI, CI=true: the reference pages and qmon/core/queue_activity.py are checked, not rewritten, so a stale one fails the run)
docs: setup ## regenerate the reference pages from the code (and qmon/core/queue_activity.py from its schema), then build the site into build/site (mkdocs --strict)
	$(PY) -m qmon.app.docgen $(if $(CI),--check,)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

dashboard: setup ## regenerate the Grafana dashboard (config/grafana/dashboards/qmon.json) from qmon/app/dashboard.py
	$(PY) -m qmon.app.dashboard

ci: lint typecheck docs test ## what CI runs (.ci/run): lint, typecheck, the docs, then the whole test suite

bench: setup ## the steady-state targets in one run, side by side (with Quix Streams if .venv-quix exists; how long: docs/benchmarks.md)
	$(PY) benchmarks/throughput.py --targets --warmup 150 --event-ids uuid $(if $(wildcard .venv-quix/bin/python),--quix-python .venv-quix/bin/python,)

bench-scale: setup ## throughput over 10,000, 100,000 and 1,000,000 queues, a run each (docs/benchmarks.md, Scale)
	for queues in 10000 100000 1000000; do \
		$(PY) benchmarks/throughput.py --records 300000 1000000 --queues $$queues --event-ids uuid || exit 1; \
	done

bench-soak: setup ## 30 minutes at 2,000 records/s over 100,000 queues: a line a minute, soak.csv and soak.png (docs/benchmarks.md, Soak)
	$(PY) benchmarks/throughput.py --soak 30 --rate 2000 --queues 100000

clean: ## remove the venv and caches (not the Maven/Ivy caches in your home)
	rm -rf $(VENV) .pytest_cache *.egg-info build dist
