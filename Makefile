# Two commands: `make figures` (the main job) and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= demo
# The README's main job: its output is exactly what figures/ holds (pipeline.run.job_options.README_LANGS).
LANGS ?= en,fr,es
# The stamp changes with pyproject.toml, so an edited dependency list reinstalls.
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# Notebooks are committed without outputs or the kernel's language_info (which names the local Python
# version); cell ids are kept so that stripping changes nothing else.
STRIP_ARGS := --keep-id --extra-keys metadata.language_info
STRIP := $(VENV)/bin/nbstripout $(STRIP_ARGS)

.PHONY: figures docs reference reference-record reference-ablations reference-prepared reference-web reference-figures test venv strip lint clean-runs

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
	$(PY) -m pipeline.job --preset $(PRESET) --lang $(LANGS)

# The executed notebooks rendered as Markdown under docs/ (steps already run are skipped). Renders hold
# timings, so they are a separate command: the main job's output stays byte for byte reproducible.
docs: $(STAMP)
	$(PY) -m pipeline.job --preset $(PRESET) --lang $(LANGS) --docs docs

# The CPU reference runs (helpers.presets), every one from committed code (a record refuses a dirty tree): English,
# French and Spanish, seeds 0, 1 and 2, 4,800 steps (English with the control BERT_FT_PERM); then the training-length
# series from the same prepared data and vectors, each length with its own schedule: 1,200 steps for every language
# and seed (with the control) and 2,400 for English seed 0. About 1.2 to 2.5 hours per 4,800-step model on one core
# of a 2-core CPU (two runs at once; the README quotes the records): some 46 hours in all. Every step resumes. Their
# small files are saved as records under figures/reference/, so reference-figures needs no training. A run
# trained outside this target (train_cli, a resumed session) is recorded with `make reference-record RUNS="runs/X"`.
REFERENCE_RUNS := $(foreach lang,en fr es,reference-$(lang) reference-$(lang)-seed1 reference-$(lang)-seed2)
REFERENCE_DIR := figures/reference
REFERENCE_DOCS := docs/reference
SERIES_OUT := runs/series

reference: $(STAMP)
	$(PY) -m pipeline.job --preset reference --lang en --seeds 0,1,2 --control --no-figures
	$(PY) -m pipeline.job --preset reference --lang fr,es --seeds 0,1,2 --no-figures
	for lang in en fr es; do for seed in 0 1 2; do \
	  run=reference-$$lang$$( [ $$seed = 0 ] || echo -seed$$seed ); \
	  for model in bert_tiny bert_ft bert_ft_perm; do \
	    init=$$( [ $$model = bert_tiny ] && echo random || echo runs/$$run/static ); \
	    $(PY) -m pipeline.train.train_cli --data runs/$$run/pretrain/data --init $$init --model $$model --seed $$seed \
	      --preset reference --steps 1200 --out $(SERIES_OUT)/$$run-steps1200 || exit 1; \
	  done; done; done
	for model in bert_tiny bert_ft; do \
	  init=$$( [ $$model = bert_tiny ] && echo random || echo runs/reference-en/static ); \
	  $(PY) -m pipeline.train.train_cli --data runs/reference-en/pretrain/data --init $$init --model $$model \
	    --preset reference --steps 2400 --out $(SERIES_OUT)/reference-en-steps2400 || exit 1; \
	done
	$(PY) -m pipeline.job --figures-from $(addprefix runs/,$(REFERENCE_RUNS)) --records $(REFERENCE_DIR)/runs \
	  --figures $(REFERENCE_DIR) --docs $(REFERENCE_DOCS)
	for run in $(REFERENCE_RUNS); do \
	  $(PY) -m pipeline.store.records --series runs/$$run $(SERIES_OUT)/$$run-steps1200 \
	    $$( [ $$run = reference-en ] && echo $(SERIES_OUT)/reference-en-steps2400 ) $(REFERENCE_DIR)/series || exit 1; \
	done
	$(MAKE) --no-print-directory reference-figures  # the series table drawn is English seed 0's

reference-record: $(STAMP)
	$(PY) -m pipeline.store.records --runs $(RUNS) $(REFERENCE_DIR)/runs

# The ablations of pipeline.train.ablations on English seeds 0 and 1 (needs runs/reference-en-seed1 too); their
# records go beside the others and reference-figures draws their table when they exist.
reference-ablations: $(STAMP)
	$(PY) -m pipeline.job --preset reference --lang en --seeds 1 --no-figures
	$(PY) -m pipeline.train.ablations --runs runs/reference-en runs/reference-en-seed1 --out runs/reference-ablations \
	  --records $(REFERENCE_DIR)/ablations
	$(MAKE) --no-print-directory reference-figures

# The other-text arm: BERT_FT_WEB starts from vectors pretrained on web-scale text (pipeline.vectors.pretrained_vectors,
# English and French only) and trains on a reference run's prepared data, so it is paired with the recorded pair by
# seed and evaluation position (pipeline.store.records --arm refuses it unless its identity, data included, is the pair's).
# reference-prepared makes those data in minutes without training the pair again: the job capped at one step
# (runs/reference-LANG[-seedN]-max1; the data do not depend on the cap). reference-web then trains, per language:
# 1,200 steps on seeds 0-2 (beside the series' pairs), 4,800 steps on seed 0 with the control BERT_FT_WEB_PERM, then
# seeds 1-2; each model is recorded as it finishes, and one already recorded is skipped. WEB_LANGS=en and WEB_LANGS=fr
# run as two processes, one thread each.
WEB_LANGS ?= en fr
PREPARED ?= runs
WEB_OUT ?= runs/web

reference-prepared: $(STAMP)
	$(PY) -m pipeline.job --preset reference --lang $$(echo $(WEB_LANGS) | tr ' ' ',') --seeds 0,1,2 --max-steps 1 \
	  --no-figures --labelled none --out $(PREPARED)

reference-web: $(STAMP)
	for steps in 1200 4800; do for lang in $(WEB_LANGS); do for seed in 0 1 2; do \
	  run=reference-$$lang$$( [ $$seed = 0 ] || echo -seed$$seed ); prepared=$(PREPARED)/$$run-max1; \
	  record=$$( [ $$steps = 1200 ] && echo $(REFERENCE_DIR)/series/$$run-steps1200 || echo $(REFERENCE_DIR)/runs/$$run ); \
	  models=bert_ft_web$$( [ $$steps$$seed = 48000 ] && echo " bert_ft_web_perm" ); \
	  test -f $$prepared/static_web/manifest.json || $(PY) -m pipeline.vectors.pretrained_vectors --lang $$lang \
	    --tokenizer $$prepared/pretrain/data/tokenizer --out $$prepared/static_web || exit 1; \
	  for model in $$models; do \
	    if [ -f $$record/pretrain/$$model/run.json ]; then echo "[skip] $$model: recorded in $$record"; continue; fi; \
	    $(PY) -m pipeline.train.train_cli --data $$prepared/pretrain/data --init $$prepared/static_web --model $$model \
	      --seed $$seed --preset reference --steps $$steps --out $(WEB_OUT)/$$run-steps$$steps || exit 1; \
	    $(PY) -m pipeline.store.records --arm $$model $(WEB_OUT)/$$run-steps$$steps $$record || exit 1; \
	  done; done; done; done

# The series table first: the job hands it to notebook 06 (pipeline.run.steps.figures_parameters), which shows it.
reference-figures: $(STAMP)
	$(PY) -m evidence.series --base $(REFERENCE_DIR)/runs/reference-en --records $(REFERENCE_DIR)/series \
	  --figures $(REFERENCE_DIR)
	$(PY) -m pipeline.job --figures-from $(addprefix $(REFERENCE_DIR)/runs/,$(REFERENCE_RUNS)) --figures $(REFERENCE_DIR) \
	  --docs $(REFERENCE_DOCS)
	steps1200="$(wildcard $(REFERENCE_DIR)/series/*-steps1200)"; if [ -n "$$steps1200" ]; then \
	  $(PY) -m pipeline.job --figures-from $$steps1200 --figures $(REFERENCE_DIR)/steps1200; fi
	if [ -d $(REFERENCE_DIR)/ablations ]; then $(PY) -m evidence.ablations --run-records \
	  $(REFERENCE_DIR)/runs --records $(REFERENCE_DIR)/ablations --figures $(REFERENCE_DIR); fi

# --durations: every run names its slowest tests, so the suite's 12-minute budget is watched where it is spent.
# -n: one pytest-xdist worker per core, at most 4; tests/conftest.py keeps each test file, and the smoke pipeline's
# files together, on one worker. Serially the suite took 1.9 times as long on 2 cores (13.5 against 7.0 minutes).
test: $(STAMP) lint
	$(PY) -m pytest -n auto --maxprocesses=4 --durations=15

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	@$(STRIP) --verify notebooks/*.ipynb || { echo "notebooks carry outputs: run 'make strip'"; exit 1; }

strip: $(STAMP)
	$(STRIP) notebooks/*.ipynb

clean-runs:
	rm -rf runs
