# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint setup clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# The sample scenario on the embedded defaults: SQLite checkpoints + the offline simulator.
demo: $(STAMP)
	$(BIN)/staffroom run tech-article --script scenarios/tech_article.script.txt

lint: $(STAMP)
	$(BIN)/ruff format --check framework tests benchmarks
	$(BIN)/ruff check framework tests benchmarks
	$(BIN)/mypy framework

test: lint
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .staffroom .mypy_cache .ruff_cache .pytest_cache
