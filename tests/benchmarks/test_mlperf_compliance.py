"""benchmarks.mlperf_compliance: the rules a log is checked under, and bad input in one line.
(Every memorised run's log passing: tests/memorisation.py.)"""

from __future__ import annotations

import subprocess

from zoo_testing import PYTHON, REPO

from models.core import mlperf


def test_every_benchmark_family_has_its_ruleset():
    rulesets = {name: ruleset for name, ruleset in mlperf.BENCHMARKS.values()}
    assert rulesets == {
        "resnet": "1.0.0",
        "ssd": "1.0.0",
        "maskrcnn": "1.0.0",
        "bert": "1.0.0",
        "transformer": "0.7.0",
    }


def test_a_folder_without_a_log_is_one_line(tmp_path):
    command = [PYTHON, "-m", "benchmarks.mlperf_compliance", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path}: neither an MLPerf log nor a model_dir with records/*.mlperf.log"
    )
