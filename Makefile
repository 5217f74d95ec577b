# Two commands: `make figures` (the main job) and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= demo
LANGS ?= en
# The stamp changes with pyproject.toml, so an edited dependency list reinstalls.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: figures test venv clean-runs

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

figures: $(STAMP)
	$(PY) -m helpers.run --preset $(PRESET) --lang $(LANGS)

test: $(STAMP)
	$(PY) -m pytest

clean-runs:
	rm -rf runs
