# codenav: the front door. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
REPO ?= $(CURDIR)
CORPUS ?=
SEED ?=
PORT ?= 8765
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.DEFAULT_GOAL := help
.PHONY: help install run test bench eval check fmt clean

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'
	@echo "  variables: REPO=path (run), SEED=snapshot (run), CORPUS=path (bench), PORT=8765 (run)"

STAMP := $(VENV)/.installed
PROJECTS := services/core/pyproject.toml services/cli/pyproject.toml services/api/pyproject.toml services/worker/pyproject.toml \
            services/watcher/pyproject.toml services/adapter/pyproject.toml \
            services/embedder/pyproject.toml pyproject.toml

# codenav/_native.c is built into the editable install: a change to it needs a reinstall.
$(STAMP): $(PROJECTS) services/core/setup.py services/core/codenav/_native.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	# torch is pinned (torch==2.13.0 in services/embedder): a CPU wheel, never a CUDA build.
	$(PY) -m pip install -q -e "services/core[server,embedded]" -e services/cli -e services/api \
	    -e services/worker -e services/watcher -e services/adapter -e services/embedder \
	    --group dev
	touch $(STAMP)

install: $(STAMP) ## create .venv and install everything (idempotent)

run: install ## start the whole stack locally and index REPO (default: this checkout); SEED=file imports a snapshot first
	$(VENV)/bin/codenav up --repo "$(REPO)" --port $(PORT) $(if $(SEED),--seed "$(SEED)")

test: install ## run the test suite against real Postgres, Redis, RQ workers and MCP
	$(PY) -m pytest

bench: install ## indexing, search and live-index benchmarks (CORPUS=path adds a corpus)
	$(PY) bench/index_bench.py $(if $(CORPUS),--corpus "$(CORPUS)") --semantic 120 --fill-vectors --runs 3
	$(if $(CORPUS),$(PY) bench/graph_bench.py --corpus "$(CORPUS)")
	$(PY) bench/embed_pipeline_bench.py
	$(if $(CORPUS),$(PY) bench/embed_budget_bench.py "$(CORPUS)")
	$(if $(CORPUS),$(PY) bench/stack_memory_bench.py "$(CORPUS)" --runs 3)
	$(PY) bench/live_bench.py $(if $(CORPUS),--corpus "$(CORPUS)")
	$(PY) bench/redact_bench.py
	$(PY) bench/grep_bench.py $(if $(CORPUS),--corpus "$(CORPUS)")
	$(PY) bench/seed_bench.py $(if $(CORPUS),--corpus "$(CORPUS)")
	$(PY) bench/refs_bench.py $(if $(CORPUS),--corpus "$(CORPUS)")
	$(PY) bench/overlay_bench.py $(if $(CORPUS),--corpus "$(CORPUS)")

eval: install ## retrieval quality: SWE-bench Verified, commit history, the ranker left-one-repo-out
	$(PY) bench/eval_swebench.py $(EVAL_ARGS)
	$(PY) bench/eval_history.py $(HISTORY_ARGS)
	$(PY) bench/train_ranker.py $(RANKER_ARGS)

check: install ## ruff and mypy
	$(VENV)/bin/ruff check services tests bench
	$(VENV)/bin/mypy

fmt: install ## fix what ruff can fix
	$(VENV)/bin/ruff check --fix services tests bench

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
