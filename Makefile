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

.PHONY: install lint test test-fast up preview destroy lock pulumi-cli bench clean

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

pulumi-cli:
	@command -v pulumi >/dev/null || { \
	  echo "The Pulumi CLI is not installed. Installing it the official way:"; \
	  echo "  curl -fsSL https://get.pulumi.com | sh"; \
	  curl -fsSL https://get.pulumi.com | sh && echo 'Add ~/.pulumi/bin to PATH and re-run.' ; \
	  command -v pulumi >/dev/null || exit 1; }

up: install pulumi-cli
	mkdir -p .pulumi-state
	pulumi stack select $(STACK) --create
	pulumi up --stack $(STACK) --yes

preview: install pulumi-cli
	mkdir -p .pulumi-state
	pulumi stack select $(STACK) --create
	pulumi preview --stack $(STACK)

destroy: install pulumi-cli
	pulumi destroy --stack $(STACK)

bench: install
	$(BIN)/python bench/program_eval.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
