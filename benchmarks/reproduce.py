"""Reproduce a published result: python -m benchmarks.reproduce official/<recipe>.gin --tpu=NAME.

--dry_run prints the exact training command and the resolved gin config, and checks that
the recipe's slice and global batch match the published row in its header.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import gin
from absl import flags

from benchmarks.output import progress, run_cli
from benchmarks.published import read_header
from benchmarks.records import load_run
from models.core import gin_config
from models.core.errors import UsageError

FLAGS = flags.FLAGS
_INCLUDE_SLICE = re.compile(r"""^include\s+['"]slices/([\w-]+)\.gin['"]""", re.M)
_TARGET = re.compile(r"(\w+)\s*[<>]=\s*([\d.]+)")  # "AP >= 0.377, mask_AP >= 0.339"


def define_flags() -> None:
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address to run on.")
    flags.DEFINE_string("model_dir", None, "Where the run writes (default: runs/<recipe>).")
    flags.DEFINE_string("data_dir", None, "ImageNet TFRecords (imagenet_to_gcs.py schema).")
    flags.DEFINE_boolean("dry_run", False, "Print command and resolved config; run nothing.")


def resolve(path: Path, header: dict[str, str]) -> str:
    """Parses the recipe (gin_config registers every family); returns the resolved config."""
    gin.clear_config()
    gin_config.parse([str(path)], [], family=header["family"])
    return gin.config_str()


def check_matches(path: Path, header: dict[str, str]) -> list[str]:
    """Problems where the recipe does not match its published row (empty when it does)."""
    problems = []
    batch = gin.query_parameter("train.global_batch_size")
    if batch != int(header["global_batch"]):
        problems.append(f"global batch {batch} != published {header['global_batch']}")
    slices = _INCLUDE_SLICE.findall(path.read_text())
    if slices != [header["slice"]]:
        problems.append(f"slice file(s) {slices} != published slice {header['slice']}")
    (metric, value), *also = [(m, float(v)) for m, v in _TARGET.findall(header["target"])]
    recipe_metric, recipe_value = _binding("train.target_metric"), _binding("train.target_value")
    if recipe_metric not in (None, metric) or recipe_value != value:
        problems.append(f"target {recipe_metric or ''} {recipe_value} != {metric} {value}")
    recipe_also = _binding("train.also_reach") or {}
    if recipe_also != dict(also):
        problems.append(f"train.also_reach {recipe_also} != published {dict(also)}")
    return problems


def _binding(name: str):
    """The parsed config's value of `name`, or None where nothing binds it."""
    try:
        return gin.query_parameter(name)
    except ValueError:
        return None


def _model_dir(path: Path) -> str:
    return FLAGS.model_dir or f"runs/{path.stem}"


def command(path: Path, header: dict[str, str]) -> list[str]:
    args = [sys.executable, "-m", f"models.{header['family']}", f"--model_dir={_model_dir(path)}"]
    args += [f"--gin_file={path}", f"--slice={header['slice']}", f"--tpu={FLAGS.tpu or 'NAME'}"]
    args += ["--precision=bfloat16", "--mode=train_and_eval", f"--recipe={path.stem}"]
    return args + ([f"--data_dir={FLAGS.data_dir}"] if FLAGS.data_dir else [])


def reproduce(recipe: str) -> dict:
    path = Path(recipe)
    if not path.is_file():
        raise UsageError(f"no recipe file {recipe} (see official/README.md)")
    header = read_header(path)
    config = resolve(path, header)
    problems = check_matches(path, header)
    result = {"recipe": str(path), "published": header, "command": command(path, header)}
    result.update(resolved_config=config, matches_published=not problems, problems=problems)
    if problems or FLAGS.dry_run:
        if problems:
            raise UsageError(f"{path} does not match its published row: {'; '.join(problems)}")
        return result
    if not FLAGS.tpu:
        raise UsageError("--tpu is required to reproduce a TPU result (or use --dry_run)")
    progress(" ".join(result["command"]))
    done = subprocess.run(result["command"])
    entry = {"family": header["family"], "model": header["model"], "recipe": path.stem}
    entry.update(slice=header["slice"], repeat=0, model_dir=_model_dir(path))
    run = load_run({**entry, "exit_code": done.returncode})
    minutes = run.time_to_accuracy_s / 60 if run.time_to_accuracy_s else None
    published = float(header["minutes"])
    result.update(status=run.status, minutes=minutes, published_minutes=published)
    result["ratio_to_published"] = minutes / published if minutes else None
    return result


def _render(result: dict) -> str:
    header = result["published"]
    lines = [f"recipe: {result['recipe']}", "command: " + " ".join(result["command"])]
    if "status" not in result:
        lines += ["resolved config:", result["resolved_config"]]
        lines.append(
            f"matches published row: slice {header['slice']}, global batch "
            f"{header['global_batch']}, {header['target']} ({header.get('round', '?')})"
        )
        return "\n".join(lines)
    got = f"{result['minutes']:.2f} min" if result["minutes"] else "target not reached"
    ratio = f" ({result['ratio_to_published']:.2f}x)" if result["ratio_to_published"] else ""
    lines.append(f"{result['status']}: {got} vs published {header['minutes']} min{ratio}")
    return "\n".join(lines)


def main() -> None:
    define_flags()
    run_cli("reproduce", lambda args: reproduce(args[0]), _render, arg="official/RECIPE.gin")


if __name__ == "__main__":
    main()
