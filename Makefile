# lipspark — two entry points: `make demo` (the main job) and `make test`; `make help` lists the others.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

DEMO_GRAPH := graphs/car_dealership-demo

.PHONY: help demo test test-slow notebook pictures bench check-java clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m lipspark.class_archive   # Spark's classes mapped at its start: 1.6x faster to a first answer (lipspark/class_archive.py)
	touch $(STAMP)

check-java:
	@$(PY) scripts/check_java.py

# two workers, a test file each at a time (its module fixtures made once): on 2 cores the suites
# took about three quarters of their serial time here (12.4 of 16.5 min, 36.9 of 49.4 min): much of a
# test is waiting on a JVM or a process
XDIST := -n 2 --dist loadfile
# the slowest cases, printed at the end of each run (CI's log keeps them: what to look at when a run nears its limit)
DURATIONS := --durations=15

test: check-java $(STAMP)   # mypy and the suite but its slow cases
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q -m "not slow" $(XDIST) $(DURATIONS)

test-slow: check-java $(STAMP)   # the minutes-long end-to-end cases; CI runs them after make test
	$(BIN)/python -m pytest -q -m slow $(XDIST) $(DURATIONS)

demo: check-java $(STAMP)   # the car dealership with provenance into graphs/car_dealership-demo, its queries, drawings
	$(BIN)/python -m lipspark.demo

$(DEMO_GRAPH)/store.json: | check-java $(STAMP)
	$(BIN)/python -m lipspark.demo

notebook: check-java $(STAMP) $(DEMO_GRAPH)/store.json   # viz/what_if.ipynb and viz/debugging.ipynb executed on the demo graph and saved with their outputs (commit them)
	$(BIN)/python scripts/notebook.py
	$(BIN)/python scripts/notebook.py viz/debugging.ipynb

pictures: $(STAMP) $(DEMO_GRAPH)/store.json   # docs/images/*.png: drawings of the demo graph, screenshots by headless Chromium (commit them)
	$(BIN)/python scripts/pictures.py

help:   # the targets and what they do
	@grep -E '^[a-z][a-z-]*:.*# ' Makefile | sed -E 's/^([a-z-]+):[^#]*# */  make \1\t/'

bench: check-java $(STAMP)   # the benchmarks (long), into benchmarks/results/
	$(BIN)/python benchmarks/micro.py
	$(BIN)/python benchmarks/car_dealership.py
	$(BIN)/python benchmarks/key_check.py      # annotate(key=...) and workflow inputs, with and without the key check
	$(BIN)/python benchmarks/queries.py   # needs graphs/car_dealership-demo (make demo)
	$(BIN)/python benchmarks/cold_queries.py   # the same, as whole processes on mapped stores
	$(BIN)/python benchmarks/after_run.py --modes serve   # a deferred run, then its first query at once (15 min)
	$(BIN)/lipspark bench                 # WorkflowGen: car dealership + Arctic stations (long)

clean:   # the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .hypothesis spark-warehouse .test-cache
