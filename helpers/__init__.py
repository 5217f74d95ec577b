"""Helpers for the static-embedding BERT notebooks.

The notebooks teach and show; the logic they rely on lives here, one small module per topic:
``data`` (corpora and labelled sets), ``masking`` (the MLM collator), ``tokenizer`` (WordPiece),
``static_vectors`` (fastText vectors aligned to a vocabulary), ``model`` and ``pretrain``
(BERT_TINY vs BERT_FT), ``probe`` (linear probing), ``figures`` (the paper's figures and tables),
``run`` (the main job) and ``runinfo`` (seed, device and the environment recorded next to results).

The preset names (smoke, demo, paper) and their one check live in ``helpers.presets``; each module
keeps the numbers of its own step in a ``PRESETS`` table beside its code.

Submodules are not imported here, so ``import helpers.pretrain`` stays light enough for a machine
that has only torch, transformers, tokenizers and numpy.
"""
