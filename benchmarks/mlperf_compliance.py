"""MLPerf's compliance checker on a run's MLPerf log, under the rules that apply to it:

    python -m benchmarks.mlperf_compliance MODEL_DIR_OR_LOG [--json]

A family that is an MLPerf benchmark (models/core/mlperf.py BENCHMARKS: resnet, ssd,
maskrcnn and bert under ruleset 1.0.0, transformer under 0.7.0) is checked as
`python -m mlperf_logging.compliance_checker --usage training --ruleset R LOG` checks it: the
common rules, the division's, the benchmark's. Any other family's log gets the ruleset's
common rules (training_1.0.0/common.yaml) alone: the division's rules would accept only
MLPerf's benchmark names. Exits 1 when the log fails."""

from __future__ import annotations

import logging
from pathlib import Path

from absl import flags
from mlperf_logging.compliance_checker import mlp_compliance, mlp_parser

from benchmarks.output import run_cli
from benchmarks.records import read_mllog
from models.core import mlperf
from models.core.errors import UsageError

FLAGS = flags.FLAGS
COMMON_RULESET = "1.0.0"


def newest_log(path: str) -> Path:
    """The log `path` names, or the newest records/*.mlperf.log of the model_dir it names."""
    given = Path(path)
    if given.is_file():
        return given
    logs = sorted((given / "records").glob("*.mlperf.log"))
    if not logs:
        raise UsageError(f"{path}: neither an MLPerf log nor a model_dir with records/*.mlperf.log")
    return logs[-1]


def submission(log: Path) -> dict[str, str]:
    """The log's submission keys (submission_benchmark, ...)."""
    events = read_mllog(log)
    return {e["key"]: e.get("value") for e in events if e["key"].startswith("submission_")}


def check(log: Path) -> dict:
    """{"log", "benchmark", "ruleset", "rules", "passed", "messages"}."""
    logging.disable(logging.WARNING)  # the checker's own lines: its verdict is the result's
    try:
        return _check(log)
    finally:
        logging.disable(logging.NOTSET)


def _check(log: Path) -> dict:
    name = submission(log).get("submission_benchmark")
    rulesets = {found: ruleset for found, ruleset in mlperf.BENCHMARKS.values()}
    ruleset = rulesets.get(name, COMMON_RULESET)
    checker = mlp_compliance.make_checker("training", ruleset, quiet=False, werror=False)
    common = f"training_{ruleset}/common.yaml"
    if name in rulesets:
        passed, rules = checker.check_file(str(log), common), "common, division and benchmark"
    else:
        loglines, errors = mlp_parser.parse_file(str(log), ruleset=ruleset)
        if errors:
            checker.put_message(f"{len(errors)} log lines could not be parsed")
        directory = Path(mlp_compliance.__file__).parent
        checker.configured_checks(loglines, str(directory / common))
        mlp_compliance.enqueued_configs.clear()  # the division's rules, which need MLPerf names
        passed, rules = not checker.has_messages(), "common"
    messages = [*checker.warnings.values(), *checker.overwritable.values()]
    messages += checker.not_overwritable
    return {
        "log": str(log),
        "benchmark": name,
        "ruleset": ruleset,
        "rules": rules,
        "passed": bool(passed),
        "messages": [str(m).strip() for m in messages],
    }


def compute(argv: list[str]) -> dict:
    return check(newest_log(argv[0]))


def render(result: dict) -> str:
    verdict = "SUCCESS" if result["passed"] else "FAILED"
    lines = [
        f"{result['log']}: {verdict} (benchmark {result['benchmark']}, ruleset "
        f"{result['ruleset']}, {result['rules']} rules)"
    ]
    return "\n".join(lines + [f"  {message}" for message in result["messages"]])


def main() -> None:
    run_cli(
        "mlperf_compliance",
        compute,
        render,
        arg="MODEL_DIR_OR_LOG",
        exit_code=lambda r: 0 if r["passed"] else 1,
    )


if __name__ == "__main__":
    main()
