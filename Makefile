# s3-ingest-pipeline — developer and CI entry points (GNU make; needs only python3 to start).
#
#   make bootstrap   .venv (app + dev tools), .venv-sam (aws-sam-cli), .venv-checkov (checkov),
#                    .venv-lambda (the local cloud's Lambda Python runtime: Python 3.13 + awslambdaric),
#                    pinned in pyproject.toml, installed by uv (pinned there too; pip installs only uv)
#   make lint        ruff, ruff format --check, mypy --strict, import-linter, sam validate --lint, cfn-lint + serverless rules, checkov
#                    (side by side)
#   make build       sam build (no Docker needed: CodeUri has no requirements.txt; functions/Makefile
#                    compiles the package with Python 3.13, the runtime's version)
#   make test        bootstrap, then lint + the whole pytest suite (sam build and sam deploy of this
#                    project among its tests) + the EXPRESS pass side by side (what .ci/run runs)
#   make pytest-express  the tests whose outcome may depend on WorkflowType, again as EXPRESS
#   make unit        unit tests only
#   make demo        every workflow path on the embedded local cloud, one table (< 30 s);
#                    WORKFLOW_TYPE=EXPRESS deploys the per-object workflow as Express
#   make bench       latency per path, burst throughput, template deploy time, make test wall time,
#                    redrive vs seed 002
#   make iam-report  what each IAM statement of template.yaml allowed (the last make test, or a demo)
#   make up          ingestctl local up: the local cloud on http://127.0.0.1:4566
#   make cost        python scripts/cost_report.py
#   make clean       caches and build output (make distclean also removes the virtualenvs)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules --warn-undefined-variables

PYTHON ?= python3
TEMPLATE ?= template.yaml
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (auto: one per core; 0 runs the suite in this process).
PYTEST_WORKERS ?= auto
# The EXPRESS pass runs beside the main one (make test): one worker, as the cores are taken
# anyway, spares a second worker's start-up and collection (about 15 s of CPU).
EXPRESS_WORKERS ?= 1
# `make demo WORKFLOW_TYPE=EXPRESS`: the per-object workflow as EXPRESS (default: the template's)
WORKFLOW_TYPE ?=
# How xdist hands tests to its workers (worksteal: idle workers take tests from busy ones).
PYTEST_DIST ?= worksteal
# Jobs of `make lint` and `make test` at once (after bootstrap): each pytest run counts as one.
LINT_JOBS ?= 4
TEST_JOBS ?= 4
BENCH_ARGS ?=
# Where `make build` puts sam build's output (sam deploy's default reads .aws-sam/build).
BUILD_DIR ?= .aws-sam/build
# The runtime's Python (template.yaml's Runtime), with which functions/Makefile compiles the
# package's bytecode during sam build: python3.13 on PATH, else pyenv's 3.13; none found: the
# build ships the sources only (BYTECODE=0) and says so.
RUNTIME_PYTHON ?= $(shell if python3.13 -c '' 2>/dev/null; then echo python3.13; \
  elif [ -x "$$(pyenv prefix 3.13 2>/dev/null)/bin/python3.13" ]; then \
  echo "$$(pyenv prefix 3.13)/bin/python3.13"; fi)
REDRIVE_BENCH_ARGS ?=
# Where `make build` puts sam build's output (sam deploy's default reads .aws-sam/build).
BUILD_DIR ?= .aws-sam/build
# Where `make pytest` logs the local clouds' IAM decisions (read by `make iam-report`).
IAM_LOG := $(CURDIR)/.localcloud/iam-log

VENV := .venv
SAM_VENV := .venv-sam
BIN := $(VENV)/bin
PY := $(BIN)/python
SAM := $(SAM_VENV)/bin/sam
DEV_STAMP := $(VENV)/.bootstrap-stamp
BYTECODE_STAMP := $(VENV)/.bytecode-stamp
UV := $(BIN)/uv
UV_STAMP := $(VENV)/.uv-stamp
SAM_STAMP := $(SAM_VENV)/.bootstrap-stamp
SAM_REQS := $(SAM_VENV)/requirements.txt
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/bin/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.bootstrap-stamp
CHECKOV_REQS := $(CHECKOV_VENV)/requirements.txt
# The Lambda Python runtime of the local cloud's function environments (awslambdaric, boto3):
# Python 3.13 (RUNTIME_PYTHON), localcloud/src/localcloud/environments/.
LAMBDA_VENV := .venv-lambda
LAMBDA_STAMP := $(LAMBDA_VENV)/.bootstrap-stamp
LAMBDA_REQS := $(LAMBDA_VENV)/requirements.txt
# checkov fails on any failed check (its exit status); what does not apply is skipped in the
# resource's Metadata with a reason (tests/unit/test_template_checkov_skips.py).
# --skip-download: local checks only, no call to the Prisma Cloud API (guidelines, policies),
# so it neither needs nor waits for the network.
CHECKOV_ARGS ?= -f $(TEMPLATE) --framework cloudformation --quiet --compact --skip-download

# SAM CLI: no telemetry, no interactive prompts, a region so template checks never ask for one.
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1
export AWS_REGION ?= $(AWS_DEFAULT_REGION)
# The local cloud's speedups (localcloud/src/localcloud/speedups/): same answers, less CPU.
# `make test LOCALCLOUD_SPEEDUPS=0` runs the suite without them (everything passes, slower).
export LOCALCLOUD_SPEEDUPS ?= 1
# Python caches the bytecode of what it imports (__pycache__), as it does by default. A machine
# that sets PYTHONDONTWRITEBYTECODE (this one does) makes every process compile every module it
# imports again: botocore, moto, the AWS CLI. That tripled the CPU of each AWS CLI call (1.8 s
# instead of 0.6 s) and of each pytest worker's start, so make's commands run without it.
unexport PYTHONDONTWRITEBYTECODE
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1
# -qq: errors only (this machine's pip config lists extra index folders that do not exist,
# and pip warns about each of them for every package). pip installs only uv.
PIP_QUIET ?= -qq
UV_QUIET ?= -q
export UV_PYTHON_DOWNLOADS := never
export UV_NO_PROGRESS := 1

.PHONY: help bootstrap lint build test unit pytest pytest-express demo bench bench-cold-start iam-report up cost clean distclean

help:  ## list targets
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 12

# uv (pinned in pyproject.toml's dev group) installs every virtualenv: pip installs it into
# .venv first (the one step that needs pip), then .venv, .venv-sam and .venv-checkov are
# resolved and installed side by side (-j3). From a fresh clone on this 2-core machine that is
# about 30 s of CPU instead of the 150 s pip took (most of it resolving). When every stamp is
# up to date this is a no-op costing a few milliseconds.
bootstrap:  ## create/refresh .venv, .venv-sam, .venv-checkov and .venv-lambda (no-op when up to date)
	@$(MAKE) --no-print-directory -q $(DEV_STAMP) $(SAM_STAMP) $(CHECKOV_STAMP) $(LAMBDA_STAMP) 2>/dev/null || \
	  $(MAKE) --no-print-directory --output-sync=target -j3 $(DEV_STAMP) $(SAM_STAMP) $(CHECKOV_STAMP) $(LAMBDA_STAMP)

# .venv, and uv in it at the pin of pyproject.toml, installed by $(PYTHON)'s own pip
# (`pip --python`): the venv gets no pip of its own (ensurepip costs ~4 s, on the path of
# everything else). uv reads no pip configuration: it installs from PyPI into its own cache
# (~/.cache/uv), never downloads a Python (UV_PYTHON_DOWNLOADS) and makes every venv from
# $(PYTHON).
$(UV_STAMP): pyproject.toml scripts/bootstrap.py
	@test -x $(PY) || { echo ">> creating $(VENV)"; $(PYTHON) -m venv --without-pip $(VENV); }
	@pin=$$($(PYTHON) scripts/bootstrap.py dev-pin uv); \
	if [ "$$($(UV) --version 2>/dev/null | cut -d' ' -f2)" != "$${pin#uv==}" ]; then \
	  echo ">> installing $$pin into $(VENV) (pip)"; \
	  $(PYTHON) -m pip --python $(PY) install $(PIP_QUIET) "$$pin"; fi
	@touch $@

# The app's dev environment: re-installed only when pyproject.toml changes (a few seconds).
# The dev group pins uv too, so this keeps the uv that installs it.
$(DEV_STAMP): pyproject.toml localcloud/pyproject.toml $(UV_STAMP)
	@echo ">> installing -e ./localcloud -e .[dev] into $(VENV)"
	$(UV) pip install $(UV_QUIET) --python $(PY) -e ./localcloud -e '.[dev]'
	@touch $@

# SAM CLI: the pin lives only in pyproject.toml ([project.optional-dependencies].sam).
# scripts/bootstrap.py extracts it; uv runs only when the pin differs from the one recorded
# by the last successful install, so editing other parts of pyproject.toml costs nothing here.
$(SAM_STAMP): pyproject.toml scripts/bootstrap.py $(UV_STAMP)
	@test -x $(SAM_VENV)/bin/python || { echo ">> creating $(SAM_VENV)"; \
	  $(UV) venv $(UV_QUIET) --python "$$($(PYTHON) -c 'import sys; print(sys.executable)')" $(SAM_VENV); }
	@$(PYTHON) scripts/bootstrap.py sam-requirements $(SAM_REQS).new
	@if ! cmp -s $(SAM_REQS).new $(SAM_REQS) || ! test -x $(SAM); then \
	  echo ">> installing $$(tr '\n' ' ' < $(SAM_REQS).new)into $(SAM_VENV)"; \
	  $(UV) pip install $(UV_QUIET) --python $(SAM_VENV)/bin/python -r $(SAM_REQS).new; \
	  mv -f $(SAM_REQS).new $(SAM_REQS); \
	else rm -f $(SAM_REQS).new; fi
	@$(SAM) --version
	@touch $@

# checkov: same scheme as the SAM CLI ([project.optional-dependencies].checkov); it pins an old
# boto3 and would fight the dev pins.
$(CHECKOV_STAMP): pyproject.toml scripts/bootstrap.py $(UV_STAMP)
	@test -x $(CHECKOV_VENV)/bin/python || { echo ">> creating $(CHECKOV_VENV)"; \
	  $(UV) venv $(UV_QUIET) --python "$$($(PYTHON) -c 'import sys; print(sys.executable)')" $(CHECKOV_VENV); }
	@$(PYTHON) scripts/bootstrap.py checkov-requirements $(CHECKOV_REQS).new
	@if ! cmp -s $(CHECKOV_REQS).new $(CHECKOV_REQS) || ! test -x $(CHECKOV); then \
	  echo ">> installing $$(tr '\n' ' ' < $(CHECKOV_REQS).new)into $(CHECKOV_VENV)"; \
	  $(UV) pip install $(UV_QUIET) --python $(CHECKOV_VENV)/bin/python -r $(CHECKOV_REQS).new; \
	  mv -f $(CHECKOV_REQS).new $(CHECKOV_REQS); \
	else rm -f $(CHECKOV_REQS).new; fi
	@echo "checkov $$($(CHECKOV_VENV)/bin/python -c \
	  'import importlib.metadata as m; print(m.version("checkov"))')"  # `checkov --version`: 4 s
	@touch $@

# The Lambda Python runtime ([project.optional-dependencies].lambda-runtime: awslambdaric and
# the runtime's boto3), same scheme, with the runtime's Python (RUNTIME_PYTHON, 3.13): the local
# cloud's function environments run their handlers in it. Without a Python 3.13, with the
# nearest one found (LAMBDA_PYTHON; at worst the $(PYTHON) that makes .venv), and it says so
# (as the local cloud does for each function whose Runtime is not its version).
LAMBDA_PYTHON ?= $(or $(RUNTIME_PYTHON),$(shell for v in 3.14 3.12 3.15 3.11 3.10 3.9; do \
  if python$$v -c '' 2>/dev/null; then echo python$$v; break; fi; \
  p="$$(pyenv prefix $$v 2>/dev/null || true)/bin/python$$v"; if [ -x "$$p" ]; then echo "$$p"; break; fi; done),$(PYTHON))
$(LAMBDA_STAMP): pyproject.toml scripts/bootstrap.py $(UV_STAMP)
	@if [ -z "$(RUNTIME_PYTHON)" ]; then echo "!! no Python 3.13 (template.yaml's python3.13):" \
	  "$(LAMBDA_VENV) is made with $(LAMBDA_PYTHON), the nearest here"; fi; \
	test -x $(LAMBDA_VENV)/bin/python || { echo ">> creating $(LAMBDA_VENV)"; \
	  $(UV) venv $(UV_QUIET) --python "$$($(LAMBDA_PYTHON) -c 'import sys; print(sys.executable)')" $(LAMBDA_VENV); }; \
	$(PYTHON) scripts/bootstrap.py lambda-runtime-requirements $(LAMBDA_REQS).new; \
	if ! cmp -s $(LAMBDA_REQS).new $(LAMBDA_REQS); then \
	  echo ">> installing $$(tr '\n' ' ' < $(LAMBDA_REQS).new)into $(LAMBDA_VENV)"; \
	  $(UV) pip install $(UV_QUIET) --compile-bytecode --python $(LAMBDA_VENV)/bin/python -r $(LAMBDA_REQS).new; \
	  mv -f $(LAMBDA_REQS).new $(LAMBDA_REQS); \
	else rm -f $(LAMBDA_REQS).new; fi; \
	touch $@

# Each check is its own target, so that they run side by side (make -j) and a failing one
# does not hide the others (-k): the 2 cores are shared by processes that are each single-threaded.
LINT_CHECKS := lint-ruff lint-format lint-asl lint-mypy lint-imports lint-sam lint-cfn lint-checkov
.PHONY: $(LINT_CHECKS)
lint:  ## static checks: python code and the SAM template (side by side)
	@$(MAKE) --no-print-directory --output-sync=target -k -j$(LINT_JOBS) $(LINT_CHECKS)

lint-ruff: $(DEV_STAMP)
	$(BIN)/ruff check .
lint-format: $(DEV_STAMP)
	$(BIN)/ruff format --check .
lint-asl: $(DEV_STAMP)
	$(PY) scripts/build_asl.py --check  # statemachines/*.asl.json are what their YAML sources generate
lint-mypy: $(DEV_STAMP)
	$(BIN)/mypy  # functions/ingest_pipeline and tools/ingest_tools (pyproject.toml)
lint-sam: $(SAM_STAMP)
	$(SAM) validate --lint --template-file $(TEMPLATE)
lint-cfn: $(DEV_STAMP)
	$(BIN)/cfn-lint --append-rules cfn_lint_serverless.rules -- $(TEMPLATE)
lint-checkov: $(CHECKOV_STAMP)
	$(CHECKOV) $(CHECKOV_ARGS)
lint-imports: $(DEV_STAMP)  # import-linter contracts of pyproject.toml: localcloud stands alone, no cycles
	$(BIN)/lint-imports

# (`make`, not $(MAKE), for the wheel: `make -n build` must print this recipe, not run it.)
build: $(SAM_STAMP)  ## sam build into .aws-sam/ (cached, parallel)
	@if [ -z "$(RUNTIME_PYTHON)" ]; then echo "!! no Python 3.13: sam build ships the package" \
	  "without bytecode (every cold start compiles it; README, Deploy)"; fi
	export RUNTIME_PYTHON="$(RUNTIME_PYTHON)" BYTECODE=$(if $(RUNTIME_PYTHON),1,0); \
	MSGSPEC_WHEEL=$$(MAKEFLAGS= make --no-print-directory -s -C functions wheel \
	  WHEEL_DIR=$(CURDIR)/.aws-sam/wheels) $(SAM) build --template-file $(TEMPLATE) --cached --parallel \
	  --build-dir $(BUILD_DIR)

# uv installs no bytecode, so the first processes to import moto, botocore and the rest
# compile them, each its own copy while none is written: from a fresh clone the 3 pytest
# workers of `make test` did it at once (about 15 s of CPU each). One collection compiles
# what they all import first (pytest's rewritten test modules too); the lint checks and
# sam build run beside it. Again only when .venv is installed again.
$(BYTECODE_STAMP): $(DEV_STAMP)
	$(BIN)/pytest --collect-only -q -p no:xdist -p no:cacheprovider > /dev/null
	@touch $@

# pytest exits 5 when it collects nothing; report that loudly instead of failing the run.
# Every local cloud logs its IAM decisions to IAM_LOG; at the end the suite fails when an
# Allow statement of template.yaml was needed by no call and is not justified (tests/conftest.py).
pytest: $(BYTECODE_STAMP) $(SAM_STAMP) $(LAMBDA_STAMP)  ## the whole pytest suite (pytest-xdist, PYTEST_WORKERS)
	@rm -rf $(IAM_LOG); rc=0; LOCALCLOUD_IAM_LOG=$(IAM_LOG) LOCALCLOUD_IAM_CHECK=1 \
	  $(BIN)/pytest -n $(PYTEST_WORKERS) --dist $(PYTEST_DIST) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "!! pytest collected no tests"; rc=0; fi; exit $$rc

# The tests whose outcome may depend on the template's WorkflowType, once more with the
# per-object workflow as EXPRESS (every stack of the run gets WorkflowType=EXPRESS, as
# `sam deploy --parameter-overrides`): tests/e2e and tests/statemachine less the modules that
# cannot differ (tests/conftest.py, WORKFLOW_INDEPENDENT, marks the others workflow_type).
pytest-express: $(BYTECODE_STAMP) $(SAM_STAMP) $(LAMBDA_STAMP)  ## the workflow_type tests of tests/e2e and tests/statemachine as EXPRESS
	LOCALCLOUD_PARAMETER_OVERRIDES="WorkflowType=EXPRESS" \
	  $(BIN)/pytest -n $(EXPRESS_WORKERS) --dist $(PYTEST_DIST) -m workflow_type $(PYTEST_ARGS) \
	  tests/e2e tests/statemachine

# Everything runs side by side (-j, -k: every check reports; make exits non-zero when any
# failed, and --output-sync prints each one's output whole when it ends). Each check waits
# only for the virtualenv it uses, so the tests start while .venv-checkov is still being
# installed. The two pytest runs start first (the suite's longest tests are on the critical
# path); the lint checks and sam build take the other TEST_JOBS slots, filling the gaps the
# pytest workers leave (collection, the last tests of a run).
# (sam build is one of the tests: tests/e2e/test_sam_deploy.py builds into a directory of its
# own with `make build BUILD_DIR=...`, deploys the build with sam deploy and uploads to it.)
test:  ## bootstrap, then lint + whole test suite (sam build included) + EXPRESS pass side by side (what CI runs)
	@$(MAKE) --no-print-directory --output-sync=target -k -j$(TEST_JOBS) \
	  pytest pytest-express $(LINT_CHECKS)

unit: bootstrap  ## unit tests only
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

# The app's venv and the Lambda runtime's (no SAM CLI): each function runs in environment
# processes of its own (on the nearest Python where no 3.13 is found).
demo: $(DEV_STAMP) $(LAMBDA_STAMP)  ## every workflow path through the local cloud (S3 -> EventBridge -> Step Functions), one table
	$(BIN)/ingestctl local demo $(if $(WORKFLOW_TYPE),--workflow-type $(WORKFLOW_TYPE))

bench: bootstrap  ## latency per path, burst, deploy time, make test wall time, redrive, transform MB/s, large formats, cold start
	$(PY) scripts/bench.py $(BENCH_ARGS)
	$(PY) scripts/bench_redrive.py $(REDRIVE_BENCH_ARGS)
	$(PY) scripts/bench_transform.py
	$(PY) scripts/bench_large.py
	$(PY) scripts/bench_large_formats.py
	$(MAKE) --no-print-directory bench-cold-start

# As deployed where a Python 3.13 is found: the package sam build ships, imported by a venv of
# that Python with the runtime's pinned boto3 and Powertools (.venv-runtime, made once).
# Without one: this venv's Python on the sources (a slower interpreter, no bytecode).
# Then, where valgrind is installed, the instructions each handler executes over the floor's
# (traced), which the machine's load does not change, and their estimate in ms (the +40 ms
# target of issue 40): about 4 minutes.
COLD_START_ARGS = $(if $(RUNTIME_PYTHON),--runtime-python $(RUNTIME_PYTHON) \
  --built .aws-sam/build/ReconcileFunction)
bench-cold-start: $(if $(RUNTIME_PYTHON),build,bootstrap)  ## each handler's cold start beside bare boto3 + one client
	$(PY) scripts/bench_cold_start.py --tracing both $(COLD_START_ARGS)
	@if command -v valgrind >/dev/null; then $(PY) scripts/bench_cold_start.py --instructions \
	  --tracing enabled $(COLD_START_ARGS); else echo "(no valgrind: no instruction counts)"; fi

# After `make test`: the suite's decisions; without them, one demo run's.
iam-report: $(DEV_STAMP)  ## per IAM statement of template.yaml: what it allowed, what it never did
	@if ls $(IAM_LOG)/*.json >/dev/null 2>&1; then $(BIN)/ingestctl local iam-report $(IAM_LOG); \
	else $(BIN)/ingestctl local demo --iam-report; fi

up: $(DEV_STAMP)  ## serve the local cloud on 127.0.0.1:4566 (ingestctl local up)
	$(BIN)/ingestctl local up --outputs .localcloud/outputs.json

cost: bootstrap  ## monthly cost estimate
	$(PY) scripts/cost_report.py

clean:  ## remove build output and tool caches (keeps the virtualenvs)
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache build dist
	find . -path ./$(VENV) -prune -o -path ./$(SAM_VENV) -prune -o -path ./$(CHECKOV_VENV) -prune \
	  -o -path ./.venv-runtime -prune -o -path ./$(LAMBDA_VENV) -prune -o \
	  \( -name __pycache__ -o -name '*.egg-info' \) -type d -print0 | xargs -0 rm -rf

distclean: clean  ## clean + remove .venv, .venv-sam, .venv-checkov, .venv-lambda and .venv-runtime
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) $(LAMBDA_VENV) .venv-runtime
