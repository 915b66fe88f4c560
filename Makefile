# qmon: `make demo` and `make test` are the two commands a new user needs (see README).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help setup demo test test-fast lint format typecheck bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "qmon needs Python 3.11 or later")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install qmon (editable) with test dependencies

demo: setup ## set up, then run the demo: local Kafka broker, live workload, the job (Ctrl-C stops)
	$(VENV)/bin/qmon demo $(if $(DURATION),--duration $(DURATION))

test: setup ## set up, then run the whole test suite (real Kafka broker, real Spark)
	$(VENV)/bin/pytest

test-fast: setup ## only the pure-logic unit tests (no Spark, no Kafka)
	$(VENV)/bin/pytest -m "not spark and not kafka"

lint: setup ## ruff
	$(VENV)/bin/python -m pip install --quiet ruff && $(VENV)/bin/ruff check qmon streaming connectors tests

format: setup ## ruff format
	$(VENV)/bin/python -m pip install --quiet ruff && $(VENV)/bin/ruff format qmon streaming connectors tests

bench: setup ## benchmarks (figures printed, nothing asserted)
	$(PY) benchmarks/throughput.py

clean: ## remove the venv and caches (not the Maven/Ivy caches in your home)
	rm -rf $(VENV) .pytest_cache *.egg-info
