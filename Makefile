# Everything a fresh machine needs: `make demo` runs the main job, `make test` the checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck docs pytest load-check bench clean

$(STAMP): pyproject.toml
	@echo "codeact: installing into $(VENV) (a few minutes on a fresh machine)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	# Test data only (published function schemas): unpacked beside the environment, not
	# installed into it, so its unmet requirements never trouble a later pip install.
	$(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(VENV)/test-data "bfcl-eval==2026.3.23"
	touch $(STAMP)

demo: $(STAMP)
	@echo "codeact: adding the benchmark extra..."
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python -m codeact.demo
	$(BIN)/python -m codeact compare

test: lint typecheck docs pytest

lint: $(STAMP)
	$(BIN)/ruff check codeact stdlib_bindings tests benchmarks examples notebooks
	$(BIN)/ruff format --check codeact stdlib_bindings tests benchmarks examples notebooks

typecheck: $(STAMP)
	$(BIN)/mypy

# The guides and the reference of every public name, built with warnings as errors.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# Four test processes on any machine: most tests wait on workers and servers, not the CPU.
PYTEST_PROCESSES ?= 4

# Bytecode first, as an install has it: workers and templates never write it, and where
# PYTHONDONTWRITEBYTECODE is set nothing does, so each would compile every module it loads.
COMPILE := $(BIN)/python -m compileall -q codeact stdlib_bindings

pytest: $(STAMP)
	$(COMPILE)
	$(BIN)/pytest -q -n $(PYTEST_PROCESSES) --dist worksteal --durations=20

# The suite beside one busy process per core: it must pass as it does on a quiet machine.
load-check: $(STAMP)
	$(COMPILE)
	$(BIN)/python -m tests.load_check -- -q -p no:cacheprovider -n $(PYTEST_PROCESSES) --dist worksteal

BENCH_VENV := .bench-venv

bench:
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[dev,bench]" "pydantic-monty==1.4.0" opentelemetry-api smolagents
	$(BENCH_VENV)/bin/python -m benchmarks

clean:
	rm -rf $(VENV) .bench-venv .pytest_cache .mypy_cache .ruff_cache site
