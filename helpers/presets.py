"""Every preset whole, in one place: what ``smoke``, ``demo``, ``reference`` and ``paper`` mean.

Each notebook reads the settings of its own step from one :class:`Preset`: ``get("reference").train``
is notebook 04's :class:`TrainConfig` under the reference preset. The settings classes come first,
with what each field means; the table :data:`PRESETS` at the end shows each preset on one screen.
This module imports nothing from the rest of the package, so every module can import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from numbers import Integral
from typing import Any, Sequence

PRESET_NAMES: tuple[str, ...] = ("smoke", "demo", "reference", "paper")
PRESET_HELP = (
    "smoke: seconds, for tests; demo: a few minutes on a 2-core CPU; "
    "reference: long enough on a 2-core CPU for BERT_TINY to leave the unigram plateau; "
    "paper: the paper's full configuration, meant for a GPU"
)


# --------------------------------------------------------------------------------------------
# Checks shared by the settings below and by the command lines
# --------------------------------------------------------------------------------------------

BATCHING = ("random", "bucketed")
# Cheaper dropout randomness was measured on full steps (0.84-1.06x, benchmarks/README.md) and left out.
DROPOUT = ("torch",)
ATTENTION = ("auto", "sdpa", "sdpa_padded", "eager")
PRECISION = ("auto", "fp32", "bf16")

# Allowed values of the real-valued settings: (low, high, low allowed, high allowed). TrainConfig and
# the command line both check through check_number, so a bad value fails the same way everywhere.
NUMBER_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "lr": (0.0, 1.0, False, False),
    "eps": (0.0, 1.0, False, False),
    "beta": (0.0, 1.0, True, False),
    "weight_decay": (0.0, 1.0, True, False),
    "warmup_fraction": (0.0, 1.0, True, False),
    "grad_clip": (0.0, math.inf, False, False),
    "mlm_probability": (0.0, 1.0, False, False),
    "dropout_probability": (0.0, 1.0, True, False),
}

PAPER_TOP_N = 300_000  # Section 4.2: vectors looked up among the 300,000 most frequent words
PAPER_NORMALISATION: tuple[str, ...] = ("unit", "center")
NORMALISATION_STEPS = ("unit", "center")
FALLBACKS = ("zero", "random")
PIECE_MODES = ("skip", "strip", "subword")
CASE_MODES = ("exact", "lower_fallback")
SCALES = (None, "bert")
SOURCES = ("train", "published")


def check_number(name: str, value: Any, kind: str | None = None) -> float:
    """``value`` as a finite float inside ``NUMBER_RANGES[kind or name]``, else a ValueError naming the range."""
    low, high, low_ok, high_ok = NUMBER_RANGES[kind or name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if (value < low or (value == low and not low_ok)) or (value > high or (value == high and not high_ok)):
        interval = f"{'[' if low_ok else '('}{low:g}, {high:g}{']' if high_ok else ')'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return float(value)

def check_count(name: str, value: Any, low: int = 1, high: int | None = None, why: str = "") -> int:
    """``value`` as an integer in [low, high], else a ValueError that says what is allowed."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        allowed = f"at least {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {allowed}{why}, got {value!r}")
    return int(value)

def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value

def check_shards(shards: Any, packing: Any) -> None:
    """Shards hold the paper's per-document rows only: packing needs the whole token stream, so refuse both."""
    if not isinstance(shards, bool):
        raise ValueError(f"shards must be True or False, got {shards!r}")
    if shards and packing:
        raise ValueError("shards=True writes the paper's truncated rows and cannot pack documents; "
                         "use packing=False with shards, or shards=False with packing")

def parse_steps(steps: str | Sequence[str]) -> tuple[str, ...]:
    """'unit,center' or ('unit', 'center') -> ('unit', 'center'); unknown steps are an error."""
    parts = tuple(s.strip() for s in (steps.split(",") if isinstance(steps, str) else steps) if s.strip())
    for step in parts:
        if step not in NORMALISATION_STEPS:
            raise ValueError(f"unknown normalisation step {step!r}; use a sequence of {NORMALISATION_STEPS}, "
                             "e.g. 'unit,center' (the paper) or 'unit,center,unit'")
    return parts


# --------------------------------------------------------------------------------------------
# The settings of each notebook
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MaskingConfig:
    """Sizes for notebook 01: the tokenizer it trains, the batch it measures and the timing batch."""

    train_docs: int  # documents the demonstration tokenizer is trained on
    vocab_size: int
    stats_docs: int  # evaluation documents tokenized for the rate measurement
    stats_repeats: int  # times the stats batch is stacked before one masking call (more tokens, tighter bars)
    seq_len: int
    timing_rows: int
    timing_repeats: int
    coverage_epochs: int  # epochs in the dynamic-vs-static coverage plot
    # Rows for the coverage plot: 128 x 128 stays under torch's parallel grain size (32,768 elements),
    # so each op runs on one thread and the plot stays quick even on a CPU shared with other work.
    coverage_rows: int = 128


@dataclass(frozen=True)
class TokenizerConfig:
    """One preset's tokenizer numbers.

    ``max_docs`` caps the training documents (None = the whole training split); ``eval_docs``
    caps the documents the report encodes.
    """

    max_docs: int | None
    vocab_size: int
    min_frequency: int
    corpus_source: str
    eval_docs: int | None = None


MODELS = ("skipgram", "cbow")


@dataclass(frozen=True)
class FastTextSettings:
    """The fastText arguments that matter for quality and time (the rest keep fastText's defaults).

    ``minn``/``maxn`` are the character n-gram lengths; ``maxn=0`` turns subwords off (a plain
    word2vec-style model). ``bucket`` is the number of hashed n-gram rows (fastText's default of
    2,000,000 costs 2.4 GB at dim 300).
    """

    model: str = "skipgram"
    dim: int = 300
    epochs: int = 5
    min_count: int = 2
    minn: int = 3
    maxn: int = 6
    neg: int = 5
    ws: int = 5
    lr: float = 0.05
    bucket: int = 200_000

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown fastText model {self.model!r}; choose one of {MODELS}")
        if min(self.dim, self.epochs, self.min_count, self.neg, self.ws) < 1 or not self.lr > 0:
            raise ValueError(f"dim, epochs, min_count, neg, ws and lr must be positive: {self}")
        if self.maxn and not 0 < self.minn <= self.maxn:
            raise ValueError(f"need 0 < minn <= maxn for character n-grams (or maxn=0 for none), "
                             f"got minn={self.minn}, maxn={self.maxn}")

    @property
    def subwords(self) -> bool:
        return self.maxn > 0

    def label(self) -> str:
        grams = f"n-grams {self.minn}-{self.maxn}" if self.subwords else "no subwords"
        return f"{self.model}, {self.epochs} epochs, {grams}, {self.neg} negatives"


# fastText settings chosen by measurement (benchmarks/fasttext_settings.py, figures/vector_quality.md):
# the demo's within about 90 s of training on one thread, the reference's within about 5 minutes.
DEMO_FASTTEXT = FastTextSettings(model="cbow", epochs=30, maxn=0)
REFERENCE_FASTTEXT = FastTextSettings(model="cbow", epochs=40, maxn=0, neg=10)


@dataclass(frozen=True)
class VectorsConfig:
    """One preset's choices for notebook 03.

    ``source`` is 'train' (fastText trained here on the corpus with ``fasttext``, offline) or
    'published' (cc.LANG.300.vec.gz, whose ``fasttext.dim`` of 300 is all that applies).
    """

    source: str
    fasttext: FastTextSettings = DEMO_FASTTEXT
    top_n: int = PAPER_TOP_N
    max_docs: int | None = None
    normalisation: tuple[str, ...] = PAPER_NORMALISATION
    fallback: str = "zero"
    pieces: str = "skip"
    case: str = "exact"
    scale: str | None = None

    def __post_init__(self) -> None:
        check_choice("source", self.source, SOURCES)
        check_choice("fallback", self.fallback, FALLBACKS)
        check_choice("pieces", self.pieces, PIECE_MODES)
        check_choice("case", self.case, CASE_MODES)
        check_choice("scale", self.scale, SCALES)
        parse_steps(self.normalisation)

    @property
    def dim(self) -> int:
        return self.fasttext.dim


@dataclass(frozen=True)
class TrainConfig:
    """Everything that shapes a pretraining run; BERT_TINY and BERT_FT always share one instance.

    Optimiser choices the paper leaves open (it states AdamW, lr 5e-4, batch 128, 100k steps, 10 %
    warmup): eps 1e-6 and weight decay 0.01 on matrices only (not biases or LayerNorm), both from
    the original BERT recipe the paper says it follows; the Hugging Face Trainer's defaults would
    be eps 1e-8 and no decay. eps 1e-6 also keeps the update of rarely seen embedding rows (tiny
    second moments) bounded. Linear decay to zero after the warmup, as in BERT. Every value is
    checked on construction (finite, in range), so a bad setting fails before any training.
    """

    name: str  # the preset this came from, recorded in run.json
    steps: int
    batch_size: int
    seq_len: int = 128
    packing: bool = False  # False: the paper's [CLS] doc[:126] [SEP] per example; True: full packed blocks
    # True: prepare_data streams the training documents into memory-mapped uint16 shards (pipeline.train.shards) and
    # training reads them from disk; the same rows as in memory, so the same run. Not with packing.
    shards: bool = False
    lr: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 5_000
    checkpoint_every: int = 5_000
    eval_batch_size: int = 128
    eval_sequences: int | None = None  # first N prepared evaluation sequences (None: all)
    train_docs: int | None = None  # documents given to prepare_data (None: all)
    eval_docs: int | None = None
    mlm_probability: float = 0.15
    # How a step runs (step_options resolves 'auto'/None: the GPU configuration on CUDA, plain fp32 elsewhere);
    # each works on any device.
    compile: bool = False  # torch.compile the loss (forward and backward)
    attention: str = "auto"  # 'auto': sdpa on CPU, sdpa_padded (head dim 75 -> 80) on CUDA
    precision: str = "auto"  # 'auto': bf16 autocast on CUDA, fp32 elsewhere
    cap_masked: bool | None = None  # score a fixed number of rows (static_cap) for static shapes; None: on CUDA
    cpu_threads: int | None = None  # torch threads while training on the CPU (None: torch's default)
    max_steps: int | None = None  # the cap cap_steps applied (recorded; steps already holds its effect)
    batching: str = "random"  # 'random': BatchSampler; 'bucketed': helpers.batching (similar lengths together)
    dropout: str = "torch"  # torch's nn.Dropout (the only choice; recorded so a run says what it used)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "checkpoint_every", "eval_batch_size"):
            check_count(name, getattr(self, name))
        for name in ("eval_sequences", "train_docs", "eval_docs", "cpu_threads", "max_steps"):
            if getattr(self, name) is not None:
                check_count(name, getattr(self, name))
        check_count("seq_len", self.seq_len, 8, 128, " (Table 4: 128 positions)")
        for name in ("lr", "eps", "weight_decay", "warmup_fraction", "grad_clip", "mlm_probability"):
            check_number(name, getattr(self, name))
        if not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2:
            raise ValueError(f"betas must be a pair such as (0.9, 0.999), got {self.betas!r}")
        for i, beta in enumerate(self.betas):
            check_number(f"betas[{i}]", beta, "beta")
        check_choice("attention", self.attention, ATTENTION)
        check_choice("precision", self.precision, PRECISION)
        if self.cap_masked not in (None, True, False) or not isinstance(self.compile, bool):
            raise ValueError(f"cap_masked must be None, True or False and compile True or False, got "
                             f"{self.cap_masked!r} and {self.compile!r}")
        check_choice("batching", self.batching, BATCHING)
        check_choice("dropout", self.dropout, DROPOUT)
        check_shards(self.shards, self.packing)

    @property
    def warmup_steps(self) -> int:
        return int(round(self.warmup_fraction * self.steps))

    def replace(self, **changes: Any) -> "TrainConfig":
        return replace(self, **changes)


@dataclass(frozen=True)
class ProbeConfig:
    """How many documents to probe on and how hard to search; ``None`` means the whole split."""

    max_train: int | None
    max_test: int | None
    Cs: tuple[float, ...]
    n_boot: int
    batch_size: int
    max_length: int = 128


# --------------------------------------------------------------------------------------------
# The presets
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preset:
    """One preset's settings for every notebook (01 masking, 02 tokenizer, 03 vectors, 04 training, 05 probe)."""

    name: str
    masking: MaskingConfig
    tokenizer: TokenizerConfig
    vectors: VectorsConfig
    train: TrainConfig
    probe: ProbeConfig


PRESETS: dict[str, Preset] = {
    # Seconds per notebook, for the tests: proves the code paths, the files and resume; the numbers mean nothing.
    "smoke": Preset(
        "smoke",
        masking=MaskingConfig(train_docs=300, vocab_size=2000, stats_docs=100, stats_repeats=4, seq_len=128,
                              timing_rows=32, timing_repeats=2, coverage_epochs=20),
        # A tiny vocabulary keeps the smoke model's embedding matrix (vocab x hidden) small and fast.
        tokenizer=TokenizerConfig(max_docs=400, vocab_size=2_000, min_frequency=2, corpus_source="embedded"),
        # A few hundred documents, one epoch. dim stays 300 because the model's hidden size is 300.
        vectors=VectorsConfig(source="train", fasttext=FastTextSettings(epochs=1), max_docs=300),
        # One thread: on ops this small, two threads spend more time synchronising than computing
        # (measured 4x faster with one thread while the machine was busy).
        train=TrainConfig(name="smoke", steps=6, batch_size=4, seq_len=64, eval_every=3, checkpoint_every=3,
                          eval_batch_size=32, eval_sequences=32, train_docs=200, eval_docs=40, lr=1e-3,
                          warmup_fraction=0.2, cpu_threads=1),
        probe=ProbeConfig(max_train=100, max_test=50, Cs=(0.1, 1.0), n_boot=200, batch_size=64, max_length=32),
    ),
    # Minutes on a 2-core CPU: the paper's model and vocabulary on the embedded text, trained 300 steps.
    "demo": Preset(
        "demo",
        masking=MaskingConfig(train_docs=2000, vocab_size=8000, stats_docs=400, stats_repeats=8, seq_len=128,
                              timing_rows=128, timing_repeats=5, coverage_epochs=40),
        # The paper's vocabulary size on the whole embedded training split (~740k English words).
        tokenizer=TokenizerConfig(max_docs=None, vocab_size=30_000, min_frequency=2, corpus_source="embedded"),
        # The whole embedded training split, CBOW without subwords, 30 epochs, one thread (deterministic).
        vectors=VectorsConfig(source="train", fasttext=DEMO_FASTTEXT),
        # Batch 32 of the paper's truncated 128-token sequences, 300 steps (about one pass over the training
        # articles). lr 1e-3 with 10 % warmup: a short run needs a faster start than the paper's 5e-4 over
        # 100k steps; both models get the same schedule (notebook 04 shows the measurements). Length-bucketed
        # batches (a departure from the paper's random ones, explained in notebook 04) cut padding from 28 %
        # to 2 % and a step's time by about a fifth on this data (benchmarks/README.md).
        train=TrainConfig(name="demo", steps=300, batch_size=32, seq_len=128, eval_every=25, checkpoint_every=100,
                          eval_batch_size=128, eval_sequences=256, lr=1e-3, warmup_fraction=0.1,
                          batching="bucketed"),
        # About 90 s: a stratified 2,000 / 1,000 subset of the embedded English topic set (9,029 / 1,004), cut to
        # 64 tokens (on a bag-of-tokens baseline 64 instead of 128 tokens cost about 1 point of accuracy).
        probe=ProbeConfig(max_train=2_000, max_test=1_000, Cs=(1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0), n_boot=1000,
                          batch_size=64, max_length=64),
    ),
    # The demo's data, tokenizer and probe, with better vectors and 16x the training: BERT_TINY off the plateau.
    "reference": Preset(
        "reference",
        masking=MaskingConfig(train_docs=2000, vocab_size=8000, stats_docs=400, stats_repeats=8, seq_len=128,
                              timing_rows=128, timing_repeats=5, coverage_epochs=40),
        tokenizer=TokenizerConfig(max_docs=None, vocab_size=30_000, min_frequency=2, corpus_source="embedded"),
        # The best vectors measured within 5 minutes of training (benchmarks/fasttext_settings.py).
        vectors=VectorsConfig(source="train", fasttext=REFERENCE_FASTTEXT),
        # 4,800 steps: where the paper's claims become testable. 1,200 steps (the first row of the training-length
        # series) left BERT_TINY only 0.18-0.26 nat under the unigram at [MASK] in all nine committed runs, where
        # the testability rule of helpers.claims asks 0.5; English seed 0 at 4,800 steps ends 2.68 nat under.
        # Shorter rows of the series are this configuration with fewer steps (its own warm-up and decay).
        # Every evaluation sequence is scored.
        train=TrainConfig(name="reference", steps=4_800, batch_size=32, seq_len=128, eval_every=100,
                          checkpoint_every=100, eval_batch_size=128, lr=1e-3, warmup_fraction=0.1,
                          batching="bucketed"),
        # The committed reference runs were probed on this grid; notebook 05 names a probe whose C lies at its edge.
        probe=ProbeConfig(max_train=2_000, max_test=1_000, Cs=(0.01, 0.1, 1.0, 10.0), n_boot=1000,
                          batch_size=64, max_length=64),
    ),
    # Mištera & Král (Section 4, Table 4), meant for a GPU and C4.
    "paper": Preset(
        "paper",
        # The paper's tokenizer size (30,000) and batch (128 x 128); the embedded corpus is the text.
        masking=MaskingConfig(train_docs=10_000, vocab_size=30_000, stats_docs=495, stats_repeats=16, seq_len=128,
                              timing_rows=128, timing_repeats=10, coverage_epochs=40),
        # 30,000 cased tokens from 5 million C4 examples (needs the Hub).
        tokenizer=TokenizerConfig(max_docs=5_000_000, vocab_size=30_000, min_frequency=2, corpus_source="hub",
                                  eval_docs=10_000),
        # Published cc.LANG.300 vectors, top 300,000 words, unit + center, zero fallback, no pieces.
        vectors=VectorsConfig(source="published", fasttext=FastTextSettings(dim=300)),
        # Section 4.3: 12.8 million training sequences, tokenised once into shards on disk.
        train=TrainConfig(name="paper", steps=100_000, batch_size=128, seq_len=128, eval_every=5_000,
                          checkpoint_every=5_000, eval_batch_size=512, shards=True),
        probe=ProbeConfig(max_train=None, max_test=None, Cs=(1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0), n_boot=1000,
                          batch_size=256, max_length=128),
    ),
}


def check_preset(name: str) -> str:
    """Return ``name`` if it is a known preset, else raise a ValueError that lists the choices."""
    if name not in PRESET_NAMES:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESET_NAMES)} ({PRESET_HELP})")
    return name


def get(name: str) -> Preset:
    """The preset called ``name``, with the shared error for an unknown one."""
    return PRESETS[check_preset(name)]
