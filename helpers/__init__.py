"""Helpers for the static-embedding BERT notebooks.

Each notebook writes its algorithm in ``#| export`` cells; the same definitions live here, checked
equal by ``pipeline.notebook_sync``. The teaching modules hold those algorithms:
``masking`` (01: the 15 % selection and 80/10/10), ``tokenizer`` (02: WordPiece merges),
``static_vectors`` (03: unit+centre normalisation and the paper's Equation 3), ``model`` and
``pretrain`` (04: the masked-only loss and one training step), ``probe`` (05: pooling and the
probe), ``claims``, ``baselines`` and ``crossing`` (06: intervals, unigram floor, the claim check).

Plumbing lives in modules named for it: ``data`` and ``online`` (embedded, local and Hub corpora),
``vector_files`` and ``fasttext_training`` (vector files, downloads, local fastText), ``wordsim``
(word-similarity benchmarks), ``shards`` (uint16 token shards at the paper's scale), ``batching``
(length-bucketed batches), ``checkpoints`` and ``pretrain_cli`` (resume, run identity, the command
line), ``distributed`` (torchrun), ``plots`` (every figure), ``notebook_setup`` (the first cell of
every notebook), ``exercises`` and ``solutions`` (self-checks and reference answers), ``run`` (the
main job), ``results`` (run folders read back and paired for notebook 06), ``figures`` (06's
tables and output files), ``records`` (the small files of a run that regenerate its figures),
``ablations`` (BERT_FT retrained with one initialisation choice changed) and ``runinfo`` (seed,
device, environment).

The preset names and their one check live in ``helpers.presets``; each module exposes
``preset_config(preset)`` for the settings of its own step.

Submodules are not imported here, so ``import helpers.pretrain`` stays light enough for a machine
that has only torch, transformers, tokenizers and numpy.
"""
