"""The CLI's file-descriptor-2 filter: C libraries' noise is dropped, everything else passes,
in order, from C code writing to the descriptor directly."""

from __future__ import annotations

import subprocess

from zoo_testing import PYTHON, REPO, run_model

WRITER = """
import os
from models.core.stderr_filter import filter_c_stderr
filter_c_stderr()
for line in {lines!r}:
    os.write(2, line.encode() + b"\\n")
"""


def test_c_noise_is_dropped_and_everything_else_passes():
    lines = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "W0000 00:00:1796183197.985417    7341 op_level_cost_estimator.cc:699] Error in "
        "PredictCost() for the op: op: CropAndResize",
        "E0000 00:00:1796183197.985417    7341 some_kernel.cc:1] a real error",
        "Improper call to JPEG library in state 201",
        "error: ckpt-22 does not fit this model",
        "E0000 00:00:1796526084.856920   12312 meta_optimizer.cc:967] remapper failed: "
        "INVALID_ARGUMENT: Mutation::Apply error: fanout 'gradient_tape/LeakyReluGrad' exist",
        "2026-12-07 10:34:20.261923: E external/local_xla/xla/stream_executor/cuda/"
        "cuda_platform.cc:51] failed call to cuInit: INTERNAL: CUDA error: Failed call to "
        "cuInit: UNKNOWN ERROR (303)",
        "E0000 00:00:1796641364.261923    1998 cuda_platform.cc:51] failed call to cuInit: "
        "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    ]
    result = subprocess.run(
        [PYTHON, "-c", WRITER.format(lines=lines)], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0
    assert result.stderr.splitlines() == [lines[2], lines[4]]


def test_a_shell_that_shows_tensorflow_errors_still_gets_one_line(tmp_path, cli_env, digits_dir):
    """TF_CPP_MIN_LOG_LEVEL=2, which many TensorFlow users keep, shows C++ errors; on a machine
    without a GPU driver, CUDA's failed probe is one: the CLI keeps it off the terminal."""
    env = {**cli_env, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = run_model("resnet", tmp_path, "--mode=eval", f"--data_dir={digits_dir}", env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: --mode=eval: no checkpoint in {tmp_path}"]
