"""Helpers to run `python -m models.resnet` as a user would, in a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from zoo_testing import PYTHON


def resnet_command(model_dir, *args: str) -> list[str]:
    return [PYTHON, "-m", "models.resnet", f"--model_dir={model_dir}", *args]


def run_resnet(model_dir, *args: str, env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        resnet_command(model_dir, *args), capture_output=True, text=True, env=env, timeout=timeout
    )


def latest_record(model_dir) -> dict:
    records = sorted((Path(model_dir) / "records").glob("*.json"))
    assert records, f"no run record in {model_dir}"
    return json.loads(records[-1].read_text())


def checkpoint_files(model_dir) -> dict[str, bytes]:
    """Every checkpoint file in model_dir with its contents."""
    root = Path(model_dir)
    if not root.exists():
        return {}
    return {
        p.name: p.read_bytes() for p in root.iterdir() if p.name.startswith(("ckpt", "checkpoint"))
    }
