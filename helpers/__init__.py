"""The taught code of the static-embedding BERT notebooks: what a student reads.

Each notebook writes its algorithm in ``#| export`` cells; the same definitions live here, checked
equal by ``tests/notebook_exports.py``. One module per lesson: ``masking`` (01), ``tokenizer`` (02),
``static_vectors`` and ``fasttext_training`` (03), ``model``, ``pretrain`` and ``batching`` (04),
``probe`` (05), ``claims``, ``baselines`` and ``crossing`` (06); ``presets`` holds every preset whole,
``paper_values`` the paper's numbers, ``plots`` the figures of each lesson.

Nothing here imports the machinery (``pipeline``: the main job, run folders, checkpoints, data files,
downloads, distributed training), so this package reads on its own. Submodules are not imported
here, so ``import helpers.pretrain`` stays light enough for a machine with only torch,
transformers, tokenizers and numpy.
"""
