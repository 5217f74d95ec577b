"""The main job's command line, checked once into one typed value (:class:`JobOptions`): each option by its argparse
``type``, options together by :func:`parse_options`, so a mistake stops the job before any step runs, with one line
that says what to do."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from helpers.paper_values import LANGS as C4_PAPER_LANGS
from helpers.presets import PRESET_HELP, check_preset
from pipeline.corpora.data import CORPUS_HELP, EMBEDDED_FILES, CorpusSpec
from pipeline.corpora.labelled import LABELLED_HELP, LabelledSpec
from pipeline.corpora.parallel_help import LANGS as LIBREOFFICE_LANGS
from pipeline.corpora.parallel_help import check_langs as libreoffice_langs
from pipeline.run.steps import JobError, RunSettings
from pipeline.store.layout import DOCS_DIR, FIGURES_DIR, INPUT_HASHES_NAME, RUNS_DIR, RunLayout, check_lang, read_json
from pipeline.store.runinfo import check_seed, checked, device_argument, setting_argument

# The README's main job (`make figures`): the only configuration that writes the committed figures/.
README_PRESET = "demo"
README_LANGS = ("en", "fr", "es")
# The reference targets (make reference, reference-figures): figures/reference and docs/reference, from the records.
REFERENCE_FIGURES, REFERENCE_DOCS = FIGURES_DIR / "reference", DOCS_DIR / "reference"
REFERENCE_RECORDS, REFERENCE_SERIES = REFERENCE_FIGURES / "runs", REFERENCE_FIGURES / "series"
GUARD_HELP = ("figures/ and docs/ hold committed files: only the README's job (make figures, make docs) writes "
              "figures/ and docs/, and only a job over the committed records (--figures-from "
              "figures/reference/runs/RUN..., or --records figures/reference/runs) writes figures/reference and "
              "docs/reference, and one over the series' records of N steps (figures/reference/series/RUN-stepsN...) "
              "writes figures/reference/stepsN; anything else aimed inside figures/ or docs/ is refused unless "
              "--force. --out is never inside them, and no output goes inside a run folder. Inputs (a files: corpus "
              "or labelled set, --vectors) count by content, never by path: their SHA-256 digests are kept in each "
              f"run folder's {INPUT_HASHES_NAME} and trusted while a file's size and modification time are "
              "unchanged; delete that file to read every input again")


def names(text: str, number: bool = False) -> tuple[str, ...] | tuple[int, ...]:
    """'en,fr' -> ('en', 'fr'), or with ``number`` '0,1,2' -> (0, 1, 2) for --seeds and --gpus (non-negative
    integers): at least one, each once, compared after conversion ('1,01' names 1 twice)."""
    items = [part.strip() for part in str(text).split(",") if part.strip()]
    if not items:
        raise ValueError("needs at least one value, e.g. en,fr or 0,1,2")
    if wrong := [item for item in items if not item.isdigit()] if number else []:
        raise ValueError(f"takes non-negative integers such as 0,1,2, got {wrong[0]!r}")
    values = [int(item) for item in items] if number else items
    if twice := sorted({value for value in values if values.count(value) > 1}):
        raise ValueError(f"lists {', '.join(map(str, twice))} more than once ({text})")
    return tuple(values)


@checked
def gpu_indices(text: str) -> tuple[int, ...]:
    """'0,1' -> (0, 1), checked against the GPUs torch sees."""
    gpus = names(text, number=True)
    import torch

    available = torch.cuda.device_count()
    if missing := [g for g in gpus if g >= available]:
        raise ValueError(f"asks for GPU(s) {', '.join(map(str, missing))} but torch sees {available} CUDA device(s); "
                         "leave --gpus out to run on the CPU")
    return gpus


def spec_argument(parse: Callable[[str], Any], hint: str) -> Callable[[str], Any]:
    """``--corpus`` or ``--labelled``, parsed once: the path a ``files:``-style value names must exist."""
    def existing(text: str) -> Any:
        spec = parse(text)
        if spec.path is not None and not spec.path.exists():
            raise ValueError(f"{spec.path} does not exist; give {hint}")
        return spec
    return checked(existing)


@checked
def vectors_file(text: str) -> Path:
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"{text}: no such file; give a .vec, .vec.gz or .bin file")
    return path


def folder(text: str) -> Path:
    return Path(text).expanduser().resolve()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise JobError(f"{message} (python -m pipeline.job --help lists the options)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m pipeline.job", description="Run notebooks 01 to 06 in order with papermill.",
                     epilog=GUARD_HELP)
    parser.add_argument("--preset", default=README_PRESET, type=checked(check_preset), help=PRESET_HELP)
    parser.add_argument("--lang", dest="langs", metavar="LANG", default=",".join(README_LANGS),
                        type=checked(lambda text: tuple(map(check_lang, names(text)))),
                        help="language code(s), comma-separated (offline: en, fr, es; with --corpus libreoffice "
                        "the paper's seven, en, de, cs, pl, it, es, fr)")
    parser.add_argument("--corpus", default="embedded", help=CORPUS_HELP,
                        type=spec_argument(CorpusSpec.parse, "a text file or a folder of them (files:), or a folder "
                                           "of libreoffice-help .debs or of their extracted pages (libreoffice:)"))
    parser.add_argument("--labelled", default=LabelledSpec("auto"), type=spec_argument(
                        LabelledSpec.parse, "a labelled file or folder (files:PATH, or sib200:PATH for SIB-200)"),
                        help=f"notebook 05's labelled set for the probe: {LABELLED_HELP}")
    parser.add_argument("--vectors", type=vectors_file, help="a local .vec/.vec.gz/.bin file for "
                        "notebook 03 (default: per the preset: trained here, or the published cc.LANG.300 for paper)")
    parser.add_argument("--max-steps", type=setting_argument("max_steps"), help="cap pretraining at N steps")
    parser.add_argument("--seeds", default="0", help="seeds, comma-separated; each language runs once per seed",
                        type=checked(lambda text: tuple(map(check_seed, names(text, number=True)))))
    parser.add_argument("--out", default=str(RUNS_DIR), type=folder, help="folder for run folders (default: runs/)")
    parser.add_argument("--figures", dest="figures_dir", metavar="FIGURES", type=folder, help="folder for figures "
                        "(default: figures/ for the README's demo job, else <out>/figures-<preset>)")
    parser.add_argument("--docs", type=folder, help="also render every executed notebook as "
                        "Markdown into this folder (make docs: docs/); renders hold timings, so by default none")
    parser.add_argument("--device", default="auto", type=device_argument, help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--gpus", type=gpu_indices, help="GPU indices, comma-separated (e.g. 0,1,2,3):"
                        " the independent runs (language x seed) are spread one per GPU, each in its own process")
    parser.add_argument("--no-figures", action="store_true", help="run notebooks 01-05 only (for example to "
                        "collect runs with different seeds per language, then --figures-from)")
    parser.add_argument("--figures-from", dest="run_dirs", nargs="+", type=folder, metavar="RUN_DIR",
                        help="run only notebook 06, over these run folders (or saved records); needs --figures")
    parser.add_argument("--records", type=folder, help="with --figures-from: first save each run's record (the "
                        "small files 06 reads, pipeline.store.records) into this folder, then make the figures "
                        "from them")
    parser.add_argument("--draft", action="store_true", help="with --records: record runs trained from uncommitted "
                        "code too (never into figures/); without it such runs are refused")
    parser.add_argument("--control", action="store_true", help="notebook 04 also trains the control BERT_FT_PERM "
                        "(BERT_FT's vector rows permuted among themselves: the vectors' knowledge or their scale?)")
    parser.add_argument("--force", action="store_true", help="rerun every step even if unchanged")
    parser.add_argument("--check", action="store_true", help="run nothing: list, per run, the steps a run would "
                        "execute now (exit status 1 if any), i.e. whose results do not come from the current code")
    return parser


@dataclass(frozen=True)
class JobOptions:
    """The parser's destinations, checked: 01-05 per language and seed, then 06 (unless ``no_figures``); or, with
    ``run_dirs`` (--figures-from), 06 only over existing run folders (or, with ``records``, their records)."""

    preset: str
    langs: tuple[str, ...]
    seeds: tuple[int, ...]
    corpus: CorpusSpec
    device: str
    vectors: Path | None
    max_steps: int | None
    out: Path
    figures_dir: Path
    docs: Path | None
    gpus: tuple[int, ...] | None
    no_figures: bool
    force: bool
    check: bool
    labelled: LabelledSpec
    control: bool
    run_dirs: list[Path] | None
    records: Path | None
    draft: bool

    def runs(self) -> list[RunSettings]:
        """One run per language and seed, languages first."""
        return [RunSettings(self.preset, lang, seed, self.corpus, self.device, self.vectors, self.max_steps,
                            labelled=self.labelled, control=self.control)
                for lang in self.langs for seed in self.seeds]


def writable_folder(path: Path, option: str) -> None:
    """Create ``path`` if needed; refuse a file or a folder we cannot write."""
    if path.exists() and not path.is_dir():
        raise JobError(f"{option} {path} is a file, not a folder; give a folder path")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JobError(f"{option} {path} cannot be created ({err.strerror}); choose a folder you can write") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise JobError(f"{option} {path} is not writable; choose a folder you can write")


def check_langs(langs: Sequence[str], corpus: CorpusSpec, labelled: LabelledSpec) -> None:
    """Refuse a language the corpus or the labelled set lacks (a libreoffice corpus has the languages it names, else
    the seven), and one ``files:`` corpus (which has no language of its own) for several languages."""
    if corpus.source == "files" and len(langs) > 1:
        raise JobError(f"--lang {','.join(langs)} with one --corpus {corpus} would feed every language the same text; "
                       "run one language per files: corpus (--lang en --corpus files:EN_DIR --no-figures, then "
                       "--lang fr --corpus files:FR_DIR --no-figures, then --figures-from RUN_DIR... --figures FOLDER)")
    known = {"embedded": tuple(EMBEDDED_FILES), "hub": C4_PAPER_LANGS,
             "libreoffice": corpus.langs or LIBREOFFICE_LANGS}.get(corpus.source, langs)
    if unknown := [lang for lang in langs if lang not in known]:
        hint = " (other languages need --corpus hub or --corpus files:PATH)" if corpus.source == "embedded" else ""
        if corpus.source == "libreoffice" and unknown[0] in LIBREOFFICE_LANGS:
            hint = f" (or add it: --corpus libreoffice@{','.join(libreoffice_langs((*known, unknown[0])))})"
        raise JobError(f"unknown language {unknown[0]!r} for the {corpus.source} corpus; "
                       f"choose from {', '.join(known)}{hint}")
    for lang in langs:  # after the corpus check, so an unknown language is named as such first
        try:
            labelled.check(lang)
        except ValueError as err:
            raise JobError(f"--labelled {labelled}: {err}") from None


def default_figures_dir(options: argparse.Namespace) -> Path:
    """figures/ only for exactly the README's main job; any other keeps its figures beside its run folders."""
    readme = (options.preset == README_PRESET and tuple(options.langs) == README_LANGS
              and options.corpus.source == "embedded" and options.max_steps is None and list(options.seeds) == [0]
              and options.vectors is None and options.labelled == LabelledSpec("auto") and not options.control)
    return FIGURES_DIR if readme else options.out / f"figures-{options.preset}-{'-'.join(options.langs)}"


def guard_outputs(outputs: dict[str, Path], run_dirs: Sequence[Path], allowed: Sequence[Path],
                  force: bool) -> None:
    """The one check of where a job writes (GUARD_HELP): refuse an output inside figures/ or docs/ that is not
    ``allowed`` (unless ``force``), --out inside them at all, and any other output inside one of ``run_dirs``."""
    allowed = [path.resolve() for path in allowed]
    for option, path in outputs.items():
        home = next((h for h in (FIGURES_DIR.resolve(), DOCS_DIR.resolve()) if path.is_relative_to(h)), None)
        if home is not None and option == "--out":
            raise JobError(f"--out {path} is inside {home}, which holds committed figures and records, not run "
                           "folders; give a folder for run folders such as runs/ (read records with "
                           "--figures-from RECORD...)")
        if home is not None and not force and path not in allowed:
            raise JobError(f"{option} {path} is inside {home}, whose committed files only the README's job and the "
                           "reference targets (from figures/reference/runs or series) write; choose a folder outside "
                           "it, or add --force to replace them")
        if option == "--docs" and (run := next((d for d in run_dirs if (path / d.name).resolve() == d), None)):
            raise JobError(f"--docs {path} would put each run's renders in {path / run.name}, which is the run folder "
                           f"{run}; choose a folder outside --out, such as docs/")
        run = next((d for d in run_dirs if option != "--out" and path.is_relative_to(d)), None)
        if run is not None:
            raise JobError(f"{option} {path} is inside the run folder {run}, whose step folders and stamps it would "
                           "replace; choose a folder outside every run folder")


def check_sources(run_dirs: Sequence[Path]) -> None:
    """Refuse a --figures-from folder that is neither a run (identity.json) nor a record (pretrain/)."""
    for d in run_dirs:
        if not d.is_dir():
            raise JobError(f"--figures-from: no such run folder: {d}")
        if not (RunLayout(d).identity.is_file() or (d / "pretrain").is_dir()):
            inner = sorted(str(sub) for sub in d.iterdir() if sub.is_dir())[:3]
            hint = f"; if it holds runs or records, give its subfolders ({' '.join(inner)} ...)" if inner else ""
            raise JobError(f"--figures-from {d} holds neither a run (identity.json) nor a record (pretrain/){hint}")


def reference_outputs(run_dirs: Sequence[Path], records: Path | None) -> list[Path]:
    """What a job over committed records may write: figures/ and docs/reference from the whole set of run records
    (a subset would redraw the committed tables from fewer runs), and records only of reference runs; and
    figures/reference/stepsN from the series' records of N steps."""
    committed = {d.name for d in REFERENCE_RECORDS.iterdir() if d.is_dir()} if REFERENCE_RECORDS.is_dir() else set()
    names = {d.name for d in run_dirs}
    if records == REFERENCE_RECORDS.resolve():
        if other := [d.name for d in run_dirs if (read_json(RunLayout(d).identity) or {}).get("preset") != "reference"]:
            raise JobError(f"--records {records} keeps the committed reference records; {', '.join(other)} "
                           "is not a run of the reference preset: record it in a folder of its own")
        return [REFERENCE_FIGURES, REFERENCE_DOCS, REFERENCE_RECORDS] if names >= committed else []
    if all(d.is_relative_to(REFERENCE_RECORDS.resolve()) for d in run_dirs):
        return [REFERENCE_FIGURES, REFERENCE_DOCS] if names == committed else []
    lengths = {d.name.rpartition("-steps")[2] if d.parent == REFERENCE_SERIES.resolve() else "" for d in run_dirs}
    return [REFERENCE_FIGURES / f"steps{n}"] if len(lengths) == 1 and (n := lengths.pop()).isdigit() else []


def parse_options(argv: Sequence[str] | None = None) -> JobOptions:
    """The command line, checked: JobError on the first mistake."""
    args = build_parser().parse_args(argv)
    if args.corpus.source == "libreoffice" and not args.corpus.langs and args.run_dirs is None:
        check_langs(args.langs, args.corpus, args.labelled)  # an unknown language named as such, first
        args.corpus = replace(args.corpus, langs=args.langs)  # the paragraphs every --lang has translated
    readme = default_figures_dir(args)
    options = JobOptions(**{**vars(args), "figures_dir": args.figures_dir or readme})
    if args.run_dirs is not None:
        if args.figures_dir is None:
            raise JobError("--figures-from needs --figures FOLDER (where the figures and tables go)")
        check_sources(args.run_dirs)
        run_dirs, allowed = args.run_dirs, reference_outputs(args.run_dirs, args.records)
    else:
        if args.records is not None or args.draft:
            raise JobError("--records and --draft go with --figures-from")
        check_langs(args.langs, args.corpus, args.labelled)
        if args.vectors is not None and len(args.langs) > 1:  # one language's vectors would align every language
            raise JobError(f"--vectors {args.vectors} is one language's; run one --lang per vectors file")
        run_dirs = [run.run_dir(args.out) for run in options.runs()]
        allowed = [FIGURES_DIR, DOCS_DIR] if readme == FIGURES_DIR else []  # the README's job
    given = {"--out": args.out, "--figures": args.figures_dir, "--docs": args.docs, "--records": args.records}
    outputs = {option: path for option, path in given.items() if path is not None}  # None: not asked for
    guard_outputs(outputs, run_dirs, allowed, args.force)
    for option, path in outputs.items():
        writable_folder(path, option)
    return options
