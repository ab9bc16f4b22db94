"""Every kind of file a run leaves in its model_dir, damaged in every way: emptied, cut at a
random offset, bytes flipped, deleted, replaced by a directory. Each case ends in a resume from
the newest intact checkpoint or in one line naming the file, never in a traceback, and the
intact checkpoints stay byte-identical. `make test` runs one case per file kind and per damage
(COVERING); `make acceptance` the rest (`exhaustive`)."""

from __future__ import annotations

import os
import random
import shutil
import socket
from pathlib import Path

import pytest
from cli import checkpoint_files, run_resnet
from zoo_testing import REPO, one_error_line

DEAD_PID = 2**22 + 1  # over Linux's highest pid: no such process
DAMAGES = ("empty", "cut", "flipped", "deleted", "directory")
SHORT = ("--mode=train", "--gin_param=train.checkpoint_every_steps = 2")
SHORT += ("--gin_param=train.steps_per_loop = 2",)
# The files of a model_dir after `--steps=4` (ckpt-2, ckpt-4), by kind. The stale lock of a
# killed run is written by the test (a live run removes its own).
FILES = {
    "state": lambda d: d / "checkpoint",
    "index": lambda d: d / "ckpt-4.index",
    "data": lambda d: d / "ckpt-4.data-00000-of-00001",
    "lock": lambda d: d / "run.lock",
    "record": lambda d: next((d / "records").glob("*.json")),
    "mlperf log": lambda d: next((d / "records").glob("*.mlperf.log")),
    "config": lambda d: d / "operative_config.gin",
}
# What the rerun must say in one error line, by (kind, damage); every other case resumes.
ONE_LINE = {
    ("state", "directory"): "checkpoint is a directory where a run keeps a file",
    **{("index", d): "ckpt-4.index cannot be read" for d in ("empty", "cut", "flipped")},
    ("index", "directory"): "ckpt-4.index cannot be read",
    ("index", "deleted"): "checkpoint ckpt-4 is incomplete",
    **{("data", d): "ckpt-4 cannot be read" for d in ("empty", "cut", "flipped", "directory")},
    ("data", "deleted"): "checkpoint ckpt-4 is incomplete",
    ("lock", "directory"): "run.lock is a directory where a run keeps a file",
    ("config", "directory"): "operative_config.gin is a directory where a run keeps a file",
}
COVERING = {
    ("state", "empty"),
    ("index", "cut"),
    ("data", "flipped"),
    ("lock", "directory"),
    ("record", "cut"),
    ("mlperf log", "deleted"),
    ("config", "directory"),
}
CASES = [
    pytest.param(kind, damage, marks=[] if (kind, damage) in COVERING else pytest.mark.exhaustive)
    for kind in FILES
    for damage in DAMAGES
]


@pytest.fixture(scope="module")
def four_steps(tmp_path_factory, digits_dir) -> Path:
    model_dir = tmp_path_factory.mktemp("four_steps") / "model"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = run_resnet(model_dir, *SHORT, "--steps=4", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def damage(path: Path, how: str, rng: random.Random) -> None:
    content = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "cut":
        path.write_bytes(content[: rng.randrange(1, len(content))])
    elif how == "flipped":
        flipped = bytearray(content)
        for index in rng.sample(range(len(content)), max(1, len(content) // 50)):
            flipped[index] ^= 0xFF
        path.write_bytes(bytes(flipped))
    else:
        path.unlink()
        if how == "directory":
            path.mkdir()


@pytest.mark.slow
@pytest.mark.parametrize("kind, how", CASES)
def test_a_damaged_file_resumes_or_is_one_line(kind, how, four_steps, tmp_path, cli_env):
    model_dir = tmp_path / "model"
    shutil.copytree(four_steps, model_dir)
    (model_dir / "run.lock").write_text(f"{socket.gethostname()} {DEAD_PID}\n")  # a killed run's
    path = FILES[kind](model_dir)
    damage(path, how, random.Random(f"{kind}-{how}"))
    intact = {k: v for k, v in checkpoint_files(model_dir).items() if k.startswith("ckpt-")}
    if kind in ("index", "data"):
        intact = {k: v for k, v in intact.items() if not k.startswith("ckpt-4.")}
    result = run_resnet(model_dir, *SHORT, "--steps=6", env=cli_env, timeout=600)
    if (kind, how) in ONE_LINE:
        assert ONE_LINE[kind, how] in one_error_line(result)
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "resumed from checkpoint at step 4" in result.stdout
        assert "Traceback" not in result.stderr
    after = checkpoint_files(model_dir)
    assert {k: after.get(k) for k in intact} == intact
