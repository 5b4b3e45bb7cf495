# One entry point for newcomers and CI. Everything installs from the lock file.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STACK ?= local
# A local file state backend: no Pulumi Cloud account needed.
export PULUMI_BACKEND_URL ?= file://$(CURDIR)/.pulumi-state
# Local stacks hold no secrets; dev/prod users set their own passphrase.
export PULUMI_CONFIG_PASSPHRASE ?=
export TF_USE_LEGACY_KERAS := 1
export TF_CPP_MIN_LOG_LEVEL := 2

.PHONY: install lint test test-fast up local-run tensorboard preview destroy lock pulumi-cli stack-select bench clean estimate policy-venv policy-preview docs

$(BIN)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.lock
	touch $@

install: $(BIN)/.installed

lock:
	$(PY) -m venv /tmp/lock-venv && /tmp/lock-venv/bin/pip install -q '.[dev]' \
	  && /tmp/lock-venv/bin/pip freeze --exclude vertex-training-iac > requirements.lock

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/hadolint docker/*Dockerfile*

# tests/engine drives the real CLI through the local stack's lifecycle: build it first
# where Go exists (the tests skip, saying why, where no CLI can be had).
test: install lint policy-venv
	$(MAKE) --no-print-directory pulumi-cli || echo "No Pulumi CLI: tests/engine will skip."
	$(BIN)/pytest -q -p no:cacheprovider

test-fast: install
	$(BIN)/pytest -q -m "not slow"

# The CLI matching the pinned SDK: `pulumi` on PATH if it is that version, else the one
# built into .tools/bin (first on PATH, with the plugins the CLI looks for beside it), else
# built there from its Go modules (tools/pulumi/build.sh) where `go` exists: the official
# installer downloads from the internet, which air-gapped machines and CI cannot reach.
PULUMI_VERSION := 3.272.0
TOOLS_BIN := $(CURDIR)/.tools/bin
export PATH := $(TOOLS_BIN):$(PATH)
PULUMI := pulumi

pulumi-cli:
	@if [ "$$(pulumi version 2>/dev/null)" = "v$(PULUMI_VERSION)" ]; then :; \
	elif command -v go >/dev/null; then \
	  echo "Building the Pulumi CLI $(PULUMI_VERSION) from its Go modules into .tools/bin" \
	       "(a first build takes several minutes)."; \
	  mkdir -p .tools && set -o pipefail && \
	  tools/pulumi/build.sh $(PULUMI_VERSION) $(TOOLS_BIN) 2>&1 | tee .tools/pulumi-build.log; \
	else \
	  echo "No Pulumi CLI $(PULUMI_VERSION) on PATH and no Go to build one: install it" \
	       "(https://www.pulumi.com/docs/install/) and re-run make."; exit 1; fi
	@echo "Pulumi CLI: $$(command -v pulumi) $$(pulumi version)"

# Selects (or creates) $(STACK) in the local file backend; its config is stacks/Pulumi.$(STACK).yaml.
stack-select: install pulumi-cli
	mkdir -p .pulumi-state
	"$(PULUMI)" stack select $(STACK) --create

# Where the Pulumi CLI cannot be installed (no network, air-gapped CI), the local stack
# still runs for real: the same jobs on the same local backend, without the engine.
up: install
	@if $(MAKE) --no-print-directory pulumi-cli; then \
	  $(MAKE) --no-print-directory stack-select && "$(PULUMI)" up --stack $(STACK) --yes; \
	elif [ "$(STACK)" = local ]; then \
	  echo "Running the local stack's jobs without the Pulumi engine instead (make local-run)."; \
	  $(BIN)/python -m vertex_training.local run --stack local; \
	else exit 1; fi

# The jobs of $(STACK) on this machine's local backend, no Pulumi CLI and no cloud needed.
local-run: install
	$(BIN)/python -m vertex_training.local run --stack $(STACK)

# TensorBoard on the local jobs' logs (every job and trial of $(STACK)'s localRoot), on a
# free port; prints the URL and serves until Ctrl-C.
tensorboard: install
	$(BIN)/python -m vertex_training.local tensorboard --stack $(STACK)

preview: stack-select
	"$(PULUMI)" preview --stack $(STACK) --diff

# The public API's reference: docs/reference.md (committed; a test keeps it current) and
# browsable HTML in docs/html, both from the docstrings.
docs: install
	$(BIN)/python tools/reference.py
	$(BIN)/pdoc vertex_training -o docs/html

# What $(STACK) costs before it runs: one row per job and the Workbench instance, then
# `total: $$LOW - $$HIGH`. No CLI and no cloud needed (list prices from vertex_training/cost/prices.json).
estimate: install
	$(BIN)/python -m vertex_training.cost --stack $(STACK)

# The policy pack's own environment (pulumi-policy pins protobuf 5, the lock holds 6);
# `pulumi preview --policy-pack policy` creates the same one itself.
policy-venv: policy/venv/.installed

policy/venv/.installed: policy/requirements.txt
	test -x policy/venv/bin/python || $(PY) -m venv policy/venv
	policy/venv/bin/pip install -q -r policy/requirements.txt
	touch $@

# `pulumi preview` judged by the policy pack (policy/), with the stack's policy config
# (policy/config/$(STACK).json) where there is one.
policy-preview: stack-select
	"$(PULUMI)" preview --stack $(STACK) --diff --policy-pack policy \
	  $(if $(wildcard policy/config/$(STACK).json),--policy-pack-config policy/config/$(STACK).json)

# Protected resources (the prod bucket and its models) stay; everything else goes.
destroy: stack-select
	"$(PULUMI)" destroy --stack $(STACK) --exclude-protected

# Each script prints its ratio against a baseline measured in the same run.
bench: install
	$(BIN)/python bench/program_eval.py --jobs 10 100
	$(BIN)/python bench/input_pipeline.py
	$(BIN)/python bench/train_step.py
	$(BIN)/python bench/local_study.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
