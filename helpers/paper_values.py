"""The numbers Mištera & Král published, typed in once so every table and figure cites the same source.

Source: A. Mištera, P. Král, "Enhancing Masked Language Modeling in BERT Models Using Pretrained
Static Embeddings" (Tables 1-4, Figures 1-3, Section 5). These are the paper's results on its own
100,000-step runs on C4 with fastText cc.LANG.300 vectors; they are shown only as labelled "paper"
references beside our numbers, never as our results.
"""

from __future__ import annotations

CITATION = "Mištera & Král, Enhancing Masked Language Modeling in BERT Models Using Pretrained Static Embeddings"

# Column order of Tables 1-3 (Section 4: seven languages, three families).
LANGS: tuple[str, ...] = ("en", "de", "cs", "pl", "es", "it", "fr")
LANG_NAMES: dict[str, str] = {
    "en": "English", "de": "German", "cs": "Czech", "pl": "Polish",
    "es": "Spanish", "it": "Italian", "fr": "French",
}
# Figures 1a/1b and 2 show Czech ("morphologically very rich", Section 5); Figure 3a-f the other six.
FEATURED_LANG = "cs"
FIGURE3_LANGS: tuple[str, ...] = ("en", "de", "pl", "es", "it", "fr")

# The two models; keys match the run folder contract (pretrain/bert_tiny, pretrain/bert_ft).
MODELS: tuple[str, ...] = ("bert_tiny", "bert_ft")
# After the pair, ours: the control (rows permuted), BERT_FT from vectors pretrained on other text, and its control
MODEL_LABELS = {name: name.upper() for name in (*MODELS, "bert_ft_perm", "bert_ft_web", "bert_ft_web_perm")}

# Training setting (Section 4.3 and Table 4; evaluation interval from the captions of Figures 1 and 2).
STEPS = 100_000  # Table 4, "Number of Steps"
BATCH_SIZE = 128  # Table 4, "Batch Size"
WARMUP_STEPS = 10_000  # Table 4, "Warmup steps"
LEARNING_RATE = 5e-4  # Table 4, "Learning Rate"
SEQ_LEN = 128  # Table 4, "Maximum Sequence Length"
VOCAB_SIZE = 30_000  # Table 4, "Vocabulary Size"
N_PARAMETERS = 10_501_324  # Table 4, "Number of Parameters"
EVAL_EVERY = 5_000  # Figure 1 and Figure 2 captions: evaluated every 5,000 steps
TOP_N_WORDS = 300_000  # Section 4.2: vectors looked up among the 300,000 most frequent words
VECTOR_SOURCE = "fastText cc.LANG.300 (Common Crawl, Grave et al. 2018)"  # Section 4.2
CORPUS = "allenai/c4"  # Section 4.2

# Table 1, "Number of static embeddings vectors found for each language" (one column per language).
VECTORS_FOUND: dict[str, int] = {
    "en": 21_233,  # Table 1, column EN
    "de": 16_595,  # Table 1, column DE
    "cs": 17_208,  # Table 1, column CS
    "pl": 16_066,  # Table 1, column PL
    "es": 19_147,  # Table 1, column ES
    "it": 18_710,  # Table 1, column IT
    "fr": 19_045,  # Table 1, column FR
}

# Table 2, "Training dataset loss values", rows BERT_TINY / BERT_FT, one column per language.
TRAIN_LOSS: dict[str, dict[str, float]] = {
    "en": {"bert_tiny": 3.459, "bert_ft": 3.272},  # Table 2, training loss, column EN
    "de": {"bert_tiny": 3.467, "bert_ft": 3.098},  # Table 2, training loss, column DE
    "cs": {"bert_tiny": 3.125, "bert_ft": 2.750},  # Table 2, training loss, column CS
    "pl": {"bert_tiny": 3.266, "bert_ft": 3.115},  # Table 2, training loss, column PL
    "es": {"bert_tiny": 3.174, "bert_ft": 2.867},  # Table 2, training loss, column ES
    "it": {"bert_tiny": 3.317, "bert_ft": 2.917},  # Table 2, training loss, column IT
    "fr": {"bert_tiny": 3.162, "bert_ft": 2.881},  # Table 2, training loss, column FR
}

# Table 2, "Evaluation dataset loss values", rows BERT_TINY / BERT_FT, one column per language.
EVAL_LOSS: dict[str, dict[str, float]] = {
    "en": {"bert_tiny": 3.213, "bert_ft": 2.992},  # Table 2, evaluation loss, column EN
    "de": {"bert_tiny": 3.160, "bert_ft": 2.729},  # Table 2, evaluation loss, column DE
    "cs": {"bert_tiny": 2.818, "bert_ft": 2.414},  # Table 2, evaluation loss, column CS
    "pl": {"bert_tiny": 2.819, "bert_ft": 2.427},  # Table 2, evaluation loss, column PL
    "es": {"bert_tiny": 2.871, "bert_ft": 2.550},  # Table 2, evaluation loss, column ES
    "it": {"bert_tiny": 3.042, "bert_ft": 2.637},  # Table 2, evaluation loss, column IT
    "fr": {"bert_tiny": 2.897, "bert_ft": 2.606},  # Table 2, evaluation loss, column FR
}

# Table 3, "Evaluation accuracy across all tested languages", rows BERT_TINY / BERT_FT.
EVAL_ACCURACY: dict[str, dict[str, float]] = {
    "en": {"bert_tiny": 0.436, "bert_ft": 0.468},  # Table 3, column EN
    "de": {"bert_tiny": 0.452, "bert_ft": 0.526},  # Table 3, column DE
    "cs": {"bert_tiny": 0.502, "bert_ft": 0.574},  # Table 3, column CS
    "pl": {"bert_tiny": 0.499, "bert_ft": 0.569},  # Table 3, column PL
    "es": {"bert_tiny": 0.487, "bert_ft": 0.544},  # Table 3, column ES
    "it": {"bert_tiny": 0.461, "bert_ft": 0.534},  # Table 3, column IT
    "fr": {"bert_tiny": 0.488, "bert_ft": 0.540},  # Table 3, column FR
}

# Claims in Section 5 (Czech), checked on our runs by notebook 06 (evidence.claims_table.verify_claims).
CLAIM_LOSS_CROSSING_FRACTION = 1 / 3  # Section 5 on Figure 1a: "after less than a third of the total training time"
CLAIM_ACCURACY_CROSSING_STEP = 20_000  # Section 5.1 on Figure 2: "after only 20 000 steps" (Czech)
