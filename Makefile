# lipspark — two entry points: `make demo` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow bench check-java clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

check-java:
	@$(PY) scripts/check_java.py

test: check-java $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: check-java $(STAMP)   # the minutes-long end-to-end cases; CI runs them after make test
	$(BIN)/python -m pytest -q -m slow

demo: check-java $(STAMP)
	$(BIN)/python -m lipspark.demo

bench: check-java $(STAMP)
	$(BIN)/python benchmarks/micro.py
	$(BIN)/python benchmarks/car_dealership.py
	$(BIN)/python benchmarks/key_check.py      # annotate(key=...) and workflow inputs, with and without the key check
	$(BIN)/python benchmarks/queries.py   # needs graphs/car_dealership-demo (make demo)
	$(BIN)/python benchmarks/cold_queries.py   # the same, as whole processes on mapped stores
	$(BIN)/lipspark bench                 # WorkflowGen: car dealership + Arctic stations (long)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis spark-warehouse
