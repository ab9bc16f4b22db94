# `make demo`, `make test` and `make test-fast` each create .venv when it is missing.
PYTHON ?= python3
# pytest-xdist workers: the suite is mostly Python and subprocess time, so 2 workers on 2 cores,
# handed one test at a time, longest first (tests/conftest.py).
JOBS ?= 2
XDIST := -n $(JOBS) --dist loadgroup
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast acceptance format clean system-packages

# Plain `make`: .venv with the project and its test tools, and the Debian packages below.
install: $(STAMP) system-packages

# Debian packages that built-in datasets read (wordnet-base: WordNet's noun glosses, the BERT
# classification task; postgresql-15, with its client and libpq5: PostgreSQL's German message
# catalogues, the Transformer's translation task; espeak-ng: the built-in speech, WordNet's
# example sentences spoken in many voices, the ASR Transformer's task; pocketsphinx-testdata:
# CMU Sphinx's 12 recordings of human speech, the built-in cmu_recordings test set). Installed
# where apt-get exists and make runs as root; elsewhere, or when the install fails, the dataset
# names the command in one line when it is first built.
SYSTEM_PACKAGES := wordnet-base postgresql-15 espeak-ng pocketsphinx-testdata
system-packages:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		! dpkg -s $(SYSTEM_PACKAGES) >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			$(SYSTEM_PACKAGES) >/dev/null) || echo "warning: could not install $(SYSTEM_PACKAGES)"; \
	fi

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Time-to-accuracy of the default ResNet recipe (built-in digits, 97% top-1) on simulated
# slices cpu-1/2/4, three seeds each, then the report table and plots.
demo: $(STAMP) system-packages
	rm -rf runs/demo
	$(PY) -m benchmarks.run --recipe=resnet/default --slices=cpu-1,cpu-2,cpu-4 \
		--repeats=3 --out=runs/demo
	$(PY) -m benchmarks.report runs/demo

# CI: ruff and the layers (lint-imports: pyproject.toml's contracts), then every test: unit and
# contract tests, every family's memorisation check, the ResNet spine's runs to 97%, XLA
# compiles, cpu-2 runs, every variant built full size; then worker-seconds by family and kind
# (tests/suite_time.py).
test: $(STAMP) system-packages
	$(VENV)/bin/ruff check models benchmarks tests
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q $(XDIST) --durations=15 -m "not exhaustive" tests

# Quick iteration: every test neither marked `memorise` nor `slow`.
test-fast: $(STAMP) system-packages
	$(VENV)/bin/ruff check models benchmarks tests
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q $(XDIST) --durations=10 -m "not memorise and not slow and not exhaustive" tests

# Every family's default recipe to its target on cpu-1 (BERT's fine-tuning recipes from its
# pretraining run), then one table and plot: runs/acceptance/acceptance.md and .png; before
# them the tests marked `exhaustive` (all 144 Compare GAN combinations, every damage to every
# file of a model_dir). A subset: make acceptance FAMILIES="bert deeplab" (the exhaustive tests
# of the families named). Exits non-zero naming each run that missed.
FAMILIES ?=
EXHAUSTIVE_FAMILIES := compare_gan resnet
EXHAUSTIVE := $(if $(FAMILIES),$(addprefix tests/,$(filter $(EXHAUSTIVE_FAMILIES),$(FAMILIES))),tests)
acceptance: $(STAMP) system-packages
	$(if $(strip $(EXHAUSTIVE)),$(PY) -m pytest -q $(XDIST) -m exhaustive $(EXHAUSTIVE))
	$(PY) -m benchmarks.acceptance --out=runs/acceptance --families="$(FAMILIES)"

format: $(STAMP)
	$(VENV)/bin/ruff format models benchmarks tests

clean:
	rm -rf $(VENV)
