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

.PHONY: install lint test test-fast up local-run preview destroy lock pulumi-cli stack-select bench clean

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

test: install lint
	$(BIN)/pytest -q -p no:cacheprovider

test-fast: install
	$(BIN)/pytest -q -m "not slow"

# The CLI matching the pinned SDK; installed the official way into ~/.pulumi/bin if missing.
PULUMI_VERSION := 3.272.0
PULUMI ?= $(shell command -v pulumi 2>/dev/null || echo $(HOME)/.pulumi/bin/pulumi)

pulumi-cli:
	@test -x "$(PULUMI)" || { \
	  echo "The Pulumi CLI is not installed; installing $(PULUMI_VERSION) the official way:"; \
	  echo "  curl -fsSL https://get.pulumi.com | sh -s -- --version $(PULUMI_VERSION)"; \
	  curl -fsSL https://get.pulumi.com | sh -s -- --version $(PULUMI_VERSION) || { \
	    echo "Install failed. Install it by hand (https://www.pulumi.com/docs/install/)," \
	         "put it on PATH and re-run make."; exit 1; }; }
	@"$(PULUMI)" version

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

preview: stack-select
	"$(PULUMI)" preview --stack $(STACK) --diff

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
