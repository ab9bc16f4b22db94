# `make demo` and `make test` each create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test format clean

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Time-to-accuracy of the default ResNet recipe (built-in digits, 97% top-1) on simulated
# slices cpu-1/2/4, three seeds each, then the report table and plots.
demo: $(STAMP)
	rm -rf runs/demo
	$(PY) -m benchmarks.run --model=resnet --recipe=default --slices=cpu-1,cpu-2,cpu-4 \
		--repeats=3 --out=runs/demo
	$(PY) -m benchmarks.report runs/demo

test: $(STAMP)
	$(VENV)/bin/ruff check models benchmarks tests
	$(PY) -m pytest -q --durations=15 tests

format: $(STAMP)
	$(VENV)/bin/ruff format models benchmarks tests

clean:
	rm -rf $(VENV)
