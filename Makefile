# One entry point for newcomers and CI. Everything installs from the lock file.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STACK ?= local
# A local file state backend: no Pulumi Cloud account needed.
export PULUMI_BACKEND_URL ?= file://$(CURDIR)/.pulumi-state
# Empty where the user sets none: enough for a stack that holds no secret. A stack that holds
# one (a `secure:` value in its file) runs only with the user's PULUMI_CONFIG_PASSPHRASE or
# PULUMI_CONFIG_PASSPHRASE_FILE (python -m vertex_training.stack says so), never an empty one.
# (The CLI reads an empty PULUMI_CONFIG_PASSPHRASE before a passphrase file.)
ifndef PULUMI_CONFIG_PASSPHRASE_FILE
export PULUMI_CONFIG_PASSPHRASE ?=
endif
export TF_USE_LEGACY_KERAS := 1
export TF_CPP_MIN_LOG_LEVEL := 2

.PHONY: install lint test test-fast up outputs tensorboard preview refresh destroy lock pulumi-cli bench clean estimate policy-venv docs sdk

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

# tests/engine drives the real CLI through the local stack's lifecycle: make builds it
# first (where it cannot be had the engine tests skip, saying why, except under CI=true).
# Two workers, each test file on one (a module's tests share one stack), since most of the
# run waits on processes: the engine, its providers, jobs and servers.
test: install lint policy-venv
	$(MAKE) --no-print-directory pulumi-cli || echo "No Pulumi CLI: tests/engine will skip."
	$(BIN)/pytest -q -p no:cacheprovider -n 2 --dist loadfile

test-fast: install
	$(BIN)/pytest -q -m "not slow"

# The Pulumi CLI at the release pinned in tools/pulumi/go.mod (go.sum committed), built from
# its Go modules into .tools/bin with the release's Python helper scripts beside it:
# Pulumi's installer downloads from the internet, which air-gapped machines and CI cannot
# reach. The YAML language host (tools/pulumi-yaml) is built beside it. Quick when
# .tools/bin already holds that release; where there is no Go, a
# `pulumi` on PATH is used as it is.
TOOLS_BIN := $(CURDIR)/.tools/bin
PULUMI_CLI_VERSION := $(shell sed -n 's|^\s*github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\).*|\1|p' tools/pulumi/go.mod)
export PATH := $(TOOLS_BIN):$(PATH)

pulumi-cli:
	@if [ "$$($(TOOLS_BIN)/pulumi version 2>/dev/null)" = "$(PULUMI_CLI_VERSION)" ] \
	    && [ -x $(TOOLS_BIN)/pulumi-resource-pulumi-python ]; then :; \
	elif command -v go >/dev/null; then \
	  echo "Building the Pulumi CLI $(PULUMI_CLI_VERSION) from its Go modules into .tools/bin" \
	       "(a first build takes several minutes)."; \
	  mkdir -p .tools && set -o pipefail && \
	  tools/pulumi/build.sh $(TOOLS_BIN) 2>&1 | tee .tools/pulumi-build.log; \
	elif command -v pulumi >/dev/null; then \
	  echo "No Go to build the pinned CLI: using $$(command -v pulumi) $$(pulumi version)."; \
	else \
	  echo "No Pulumi CLI and no Go to build one: install Go (then make pulumi-cli) or" \
	       "Pulumi (https://www.pulumi.com/docs/install/)."; exit 1; fi
	@echo "Pulumi CLI: $$(command -v pulumi) $$(pulumi version)" >&2
	@# The YAML language host (examples/yaml-local), pinned in its own module; optional.
	@if command -v go >/dev/null; then tools/pulumi-yaml/build.sh $(TOOLS_BIN) >&2 \
	  || echo "No YAML language host: YAML programs (examples/yaml-local) will not run." >&2; fi

# Every stack command runs through the real engine with the program served inline
# (python -m vertex_training.stack: no Python language host needed), in this directory,
# with the stack's settings from stacks/. POLICY=1 runs the policy pack with preview/up; its
# config is policy/config/$(STACK).json (where there is one) with the stack's `budget` added,
# written to $(POLICY_CONFIG) (the pack itself reads no file of the project it judges).
STACK_COMMAND = $(BIN)/python -m vertex_training.stack
POLICY ?=
POLICY_CONFIG = .pulumi-state/policy-config.$(STACK).json
POLICY_CONFIG_COMMAND = $(if $(POLICY),mkdir -p .pulumi-state && $(STACK_COMMAND) policy-config \
  --stack $(STACK) --out $(POLICY_CONFIG) \
  $(if $(wildcard policy/config/$(STACK).json),--base policy/config/$(STACK).json) &&)
POLICY_ARGS = $(if $(POLICY),--policy-pack policy/run-pack --policy-pack-config $(POLICY_CONFIG))

preview: install pulumi-cli $(if $(POLICY),policy-venv)
	$(POLICY_CONFIG_COMMAND) $(STACK_COMMAND) preview --stack $(STACK) --diff $(POLICY_ARGS)

up: install pulumi-cli $(if $(POLICY),policy-venv)
	$(POLICY_CONFIG_COMMAND) $(STACK_COMMAND) up --stack $(STACK) $(POLICY_ARGS)

# The stack's outputs as JSON (jobs, models, endpoints and their predictUrl, ...).
outputs: pulumi-cli
	@pulumi stack output --json --stack $(STACK)

refresh: install pulumi-cli
	$(STACK_COMMAND) refresh --stack $(STACK)

# Protected resources (the prod bucket and its models) stay; everything else goes.
destroy: install pulumi-cli
	$(STACK_COMMAND) destroy --stack $(STACK) --exclude-protected

# TensorBoard on the local jobs' logs (every job and trial of $(STACK)'s localRoot), on a
# free port; prints the URL and serves until Ctrl-C.
tensorboard: install
	$(STACK_COMMAND) tensorboard --stack $(STACK)

# The public API's reference: docs/reference.md (committed; a test keeps it current) and
# browsable HTML in docs/html, both from the docstrings.
docs: install
	$(BIN)/python tools/reference.py
	$(BIN)/pdoc vertex_training -o docs/html

# The typed SDKs of the component provider (sdk/nodejs, sdk/go) from its schema
# (sdk/schema.json), by Pulumi's own code generators at the CLI's release (tools/sdkgen,
# the same module versions as tools/pulumi). Committed; a test keeps them current.
sdk: install
	$(BIN)/python -m vertex_training.provider schema > sdk/schema.json
	cd tools/sdkgen && GOFLAGS=-mod=readonly go run . ../../sdk/schema.json ../../sdk
	@# The TypeScript example's lock records the linked SDK's version and dependencies.
	if command -v npm >/dev/null; then cd examples/ts-local && npm install --package-lock-only \
	  --prefer-offline --no-audit --no-fund --loglevel=error; fi

# What $(STACK) costs before it runs: one row per job and the Workbench instance, then
# `total: $$LOW - $$HIGH`. No CLI and no cloud needed (list prices from vertex_training/cost/prices.json).
estimate: install
	$(STACK_COMMAND) estimate --stack $(STACK)

# The policy pack's own environment (pulumi-policy pins protobuf 5, the lock holds 6), run
# by the engine through the executable launcher policy/run-pack (no language host needed).
policy-venv: policy/venv/.installed

policy/venv/.installed: policy/requirements.txt
	test -x policy/venv/bin/python || $(PY) -m venv policy/venv
	policy/venv/bin/pip install -q -r policy/requirements.txt
	touch $@

# Each script prints its ratio against a baseline measured in the same run.
bench: install
	$(BIN)/python bench/program_eval.py --jobs 10 100
	$(BIN)/python bench/noop_up.py
	$(BIN)/python bench/input_pipeline.py
	$(BIN)/python bench/train_step.py
	$(BIN)/python bench/local_study.py
	$(BIN)/python bench/warm_start.py
	$(BIN)/python bench/predict.py
	$(BIN)/python bench/serve_load.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
