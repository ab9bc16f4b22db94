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

# Trains the default ResNet recipe on built-in digits to its target and prints time-to-accuracy.
demo: $(STAMP)
	rm -rf runs/demo
	$(PY) -m models.resnet --model_dir=runs/demo

test: $(STAMP)
	$(VENV)/bin/ruff check models benchmarks tests
	$(PY) -m pytest -q --durations=15 tests

format: $(STAMP)
	$(VENV)/bin/ruff format models benchmarks tests

clean:
	rm -rf $(VENV)
