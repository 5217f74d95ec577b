# Two commands: `make figures` (the main job) and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= demo
LANGS ?= en
# The stamp changes with pyproject.toml, so an edited dependency list reinstalls.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# Notebooks are committed without outputs or the kernel's language_info (which names the local Python
# version); cell ids are kept so that stripping changes nothing else.
STRIP_ARGS := --keep-id --extra-keys metadata.language_info
STRIP := $(VENV)/bin/nbstripout $(STRIP_ARGS)

.PHONY: figures test venv strip lint clean-runs

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@# A git filter strips outputs from notebooks as they are staged, so a saved session never lands in a commit.
	-git rev-parse --git-dir >/dev/null 2>&1 && \
	  git config filter.nbstripout.clean "$(abspath $(VENV))/bin/nbstripout $(STRIP_ARGS)" && \
	  git config filter.nbstripout.smudge cat && git config filter.nbstripout.required true
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

figures: $(STAMP)
	$(PY) -m helpers.run --preset $(PRESET) --lang $(LANGS)

test: $(STAMP) lint
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	@$(STRIP) --verify notebooks/*.ipynb || { echo "notebooks carry outputs: run 'make strip'"; exit 1; }

strip: $(STAMP)
	$(STRIP) notebooks/*.ipynb

clean-runs:
	rm -rf runs
