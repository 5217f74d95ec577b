"""torchrun with 2 CPU processes (gloo): the same losses as one process, files from process 0, exact resume.

Tolerance of 2 processes against 1: both draw the same batch and masks and normalise by the whole
batch's masked-token count; what differs is only the order of float32 sums (each process sums its
half of the gradient, then the halves are added; evaluation is the same arithmetic). Measured: 1e-7
relative after 12 steps. The bound, 1e-5 relative (~170 float32 rounding units of 2**-24), lies well
below the mistakes it must catch: dividing each half by its own count instead of the global one moves
the loss by 2e-4 relative by step 4 and 1e-3 by step 12 (measured on this data).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import presets
from pipeline.store.layout import read_metrics
from pipeline.train import distributed
from pipeline.train import train_cli as cli

REPO = Path(__file__).resolve().parent.parent
STEPS = ["--preset", "smoke", "--device", "cpu", "--steps", "12", "--batch-size", "8", "--eval-every", "4",
         "--checkpoint-every", "4"]
SAME_AS_ONE_PROCESS = 1e-5


@pytest.fixture(scope="module")
def data_dir(small_prepared):
    return small_prepared(presets.get("smoke").train.seq_len)


def _torchrun(data_dir: Path, out: Path, *extra: str) -> str:
    """python -m torch.distributed.run --nproc_per_node=2 -m pipeline.train.train_cli ...; one thread per process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone", "-m",
               "pipeline.train.train_cli", "--data", str(data_dir), "--out", str(out), "--model", "bert_tiny", *STEPS,
               *extra]
    # Output through files, not pipes: a pipe is read until every process holding it closes it, and a helper
    # process that outlives torchrun kept the test waiting after training had finished (seen in a fresh clone).
    with open(out.parent / f"{out.name}.out", "w+") as stdout, open(out.parent / f"{out.name}.err", "w+") as stderr:
        code = subprocess.run(command, cwd=REPO, env=env, stdout=stdout, stderr=stderr, timeout=300).returncode
        stdout.seek(0)
        stderr.seek(0)
        assert code == 0, stderr.read()[-3000:]
        return stdout.read()


def _metrics(out: Path) -> list[dict]:
    rows = read_metrics(out / "bert_tiny" / "metrics.csv")
    # NaN (step 0 has no training loss yet) as None, so that == compares rows
    return [{k: (None if v != v else v) for k, v in row.items() if k != "elapsed_s"} for row in rows]


def test_two_processes_give_the_losses_of_one(data_dir, tmp_path, capsys):
    # Dropout off: each process draws its own dropout stream, the one source of difference left.
    assert cli.main(["--data", str(data_dir), "--out", str(tmp_path / "one"), "--model", "bert_tiny", *STEPS,
                     "--model-dropout", "0"]) == 0
    stdout = _torchrun(data_dir, tmp_path / "two", "--model-dropout", "0")
    one, two = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    assert [r["step"] for r in two] == [0, 4, 8, 12]
    for a, b in zip(one, two):
        for key in ("train_loss", "eval_loss"):
            if a[key] is not None:
                assert b[key] == pytest.approx(a[key], rel=SAME_AS_ONE_PROCESS), (a["step"], key)
        assert b["eval_accuracy"] == pytest.approx(a["eval_accuracy"], abs=1e-3)
        assert b["lr"] == a["lr"]
    # Process 0 alone reports and writes; run.json records how many processes there were.
    assert len([line for line in stdout.splitlines() if line.startswith("{")]) == 1
    runs = {name: json.loads((tmp_path / name / "bert_tiny" / "run.json").read_text()) for name in ("one", "two")}
    assert runs["one"]["world_size"] == 1 and runs["two"]["world_size"] == 2
    assert runs["one"]["identity"] == runs["two"]["identity"]  # the same experiment, split differently
    assert runs["two"]["finished"] and (tmp_path / "two" / "bert_tiny" / "model").is_dir()


def test_two_processes_resume_exactly(data_dir, tmp_path, capsys):
    """Dropout on: each process's own random streams are saved by process 0 and handed back on resume."""
    _torchrun(data_dir, tmp_path / "straight")
    _torchrun(data_dir, tmp_path / "resumed", "--stop-at", "6")
    partial = json.loads((tmp_path / "resumed" / "bert_tiny" / "run.json").read_text())
    assert not partial["finished"] and partial["steps_done"] == 6
    # One process cannot continue it: the other process's dropout stream would be lost.
    code = cli.main(["--data", str(data_dir), "--out", str(tmp_path / "resumed"), "--model", "bert_tiny", *STEPS])
    assert code == 1 and "world_size: 2 -> 1" in capsys.readouterr().err
    _torchrun(data_dir, tmp_path / "resumed")
    assert _metrics(tmp_path / "resumed") == _metrics(tmp_path / "straight")


def test_each_process_takes_its_block_of_rows():
    worlds = [distributed.World(rank, 4, rank) for rank in range(4)]
    blocks = [world.my_rows(8) for world in worlds]
    assert [(b.start, b.stop) for b in blocks] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    with pytest.raises(ValueError, match="multiple of the number of processes"):
        worlds[0].my_rows(6)


def test_process_zero_keeps_the_seed_and_the_others_get_their_own_dropout_streams():
    seeds = [distributed.dropout_seed(7, distributed.World(rank, 3)) for rank in range(3)]
    assert seeds[0] == 7 and len(set(seeds)) == 3
    assert seeds == [distributed.dropout_seed(7, distributed.World(rank, 3)) for rank in range(3)]


def test_torchrun_environment_is_read_and_checked(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.from_environment() == distributed.World()
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="does not fit"):
        distributed.from_environment()
