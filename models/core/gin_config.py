"""gin + flags glue: recipe resolution, one-line parse errors, operative config."""

from __future__ import annotations

import re
from pathlib import Path

import gin
import gin.resource_reader
import tf_keras

from models.core import mlperf, optimization, recipe, registry, settings, strategy  # noqa: F401 - registers core configurables
from models.core.errors import UsageError, nearest
from models.core.files import write_atomically
from models.core.recipe_text import included_files
from models.core.registry import CONFIGS_DIR

OPERATIVE_CONFIG = "operative_config.gin"
_UNKNOWN_CONFIGURABLE = re.compile(r"No configurable matching '([^']+)'")
_UNKNOWN_PARAMETER = re.compile(r"Configurable '([^']+)' doesn't have a parameter named '([^']+)'")
_LOCATION = re.compile(r'In (file "[^"]+", line \d+|bindings string line \d+)')
SLICES = "slices"
# Parameters that moved (spine v2): an old recipe or operative_config.gin names the new place.
MOVED = {
    ("train", "eval_every_epochs"): "evaluation.every_epochs",
    ("train", "eval_batch_size"): "evaluation.batch_size",
    ("ImageClassificationTask", "model_fn"): "run.model (a registered variant name)",
}


# gin's package-resource reader imports the first part of an `include` path as a Python
# package: `include 'resnet/x.gin'` breaks wherever some folder named resnet is importable.
# Recipes include by path under configs/, so only the plain file reader is kept.
gin.config._FILE_READERS[:] = [  # noqa: SLF001 - gin offers no way to unregister a reader
    reader
    for reader in gin.config._FILE_READERS
    if reader[0] is not gin.resource_reader.system_path_reader  # noqa: SLF001
]


def register_externals() -> None:
    """The Model Garden / tf_keras classes that recipes may bind, registered in one place."""
    if "tf_keras.regularizers.L2" in gin.config._REGISTRY._selector_map:  # noqa: SLF001
        return
    gin.external_configurable(tf_keras.regularizers.L2, module="tf_keras.regularizers")
    gin.external_configurable(tf_keras.losses.Reduction, module="tf_keras.losses")


def resolve_gin_file(name: str, family: str | None = None) -> str:
    """A path as given, else a bare name under configs/ or configs/<family>/ (.gin optional)."""
    candidates = [Path(name)]
    for root in [CONFIGS_DIR] + ([CONFIGS_DIR / family] if family else []):
        candidates += [root / name, root / f"{name}.gin"]
    for path in candidates:
        if path.is_file():
            return str(path)
    known = [str(p.relative_to(CONFIGS_DIR)) for p in CONFIGS_DIR.rglob("*.gin")]
    raise UsageError(f"--gin_file={name}: no such file{nearest(name, known)}")


def _known_configurables() -> list[str]:
    selectors = gin.config._REGISTRY._selector_map  # noqa: SLF001 - gin has no public listing
    return sorted({name.split(".")[-1] for name in selectors})


def _parameters_of(configurable: str) -> list[str]:
    import inspect

    try:
        selector = gin.config._REGISTRY.get_match(configurable)  # noqa: SLF001
        return list(inspect.signature(selector.wrapped).parameters)
    except (TypeError, ValueError, AttributeError):
        return []


def _parses(text: str) -> bool:
    try:
        list(gin.config_parser.ConfigParser(text, gin.config.ParserDelegate(True)))
    except Exception:  # noqa: BLE001 - tokenize and gin syntax errors alike
        return False
    return True


def _unparsable(paths: list[str], bindings: list[str]) -> str | None:
    """The first file or binding gin cannot even tokenise alone (its errors then name no
    location), as the error line should name it."""
    for path in paths:
        if not _parses(Path(path).read_text(errors="replace")):
            return f"gin file {path}"
    return next((f"gin binding '{b}'" for b in bindings if not _parses(b)), None)


def _explain(error: Exception, paths: list[str], bindings: list[str]) -> str:
    """One line: what is wrong, where, and the nearest valid name."""
    text = str(error)
    location = _LOCATION.search(text)
    where = f" ({location.group(1)})" if location else ""
    if not location and (culprit := _unparsable(paths, bindings)):
        message = error.args[0] if error.args and isinstance(error.args[0], str) else text
        return f"bad {culprit}: {message.strip().splitlines()[0]}"
    if match := _UNKNOWN_CONFIGURABLE.search(text):
        name = match.group(1)
        return f"unknown gin configurable '{name}'{where}{nearest(name, _known_configurables())}"
    if match := _UNKNOWN_PARAMETER.search(text):
        owner, param = match.groups()
        if moved := MOVED.get((owner.split(".")[-1], param)):
            return f"gin parameter '{owner}.{param}'{where} is now {moved}"
        hint = nearest(param, _parameters_of(owner))
        return f"gin configurable '{owner}' has no parameter '{param}'{where}{hint}"
    return f"bad gin config{where}: {text.strip().splitlines()[0]}"


def _is_slice_file(path: str | Path) -> bool:
    return Path(path).resolve().parent == (CONFIGS_DIR / SLICES).resolve()


def _with_slice_last(paths: list[str], slice_name: str | None) -> list[str]:
    """Recipe files, then slice files (a slice file sets the batch whatever its place on the
    command line); --slice=NAME adds configs/slices/NAME.gin when the run names no slice
    file, neither on the command line nor by an `include` in a recipe (official/ recipes
    include theirs, then set the batch their published run used)."""
    slices = [p for p in paths if _is_slice_file(p)]
    included = [f for p in paths for f in included_files(Path(p)) if _is_slice_file(f)]
    default = CONFIGS_DIR / SLICES / f"{slice_name}.gin"
    if slice_name and not slices and not included and default.is_file():
        slices = [str(default)]
    for path in slices + [str(f) for f in included]:
        if slice_name and Path(path).stem != slice_name:
            raise UsageError(
                f"the run's slice file {path} is for {Path(path).stem}, not for "
                f"--slice={slice_name}"
            )
    return [p for p in paths if not _is_slice_file(p)] + slices


def parse(
    files: list[str],
    bindings: list[str],
    family: str | None = None,
    slice_name: str | None = None,
) -> list[str]:
    """Parses recipe files, then slice files, then bindings (bindings win); returns the
    resolved file paths in that order. Every task, model and configurable is registered
    first (the registry imports each family), so recipes never depend on import order."""
    registry.load_all()
    register_externals()
    gin.add_config_file_search_path(str(CONFIGS_DIR))
    paths = _with_slice_last([resolve_gin_file(f, family) for f in files], slice_name)
    try:
        gin.parse_config_files_and_bindings(paths, bindings, finalize_config=False)
    except Exception as error:  # noqa: BLE001 - gin raises Value/Syntax/Key/Type/tokenize errors
        raise UsageError(_explain(error, paths, bindings)) from None
    return paths


def write_operative_config(model_dir: str) -> str:
    """Writes operative_config.gin (what the run actually used) and returns its path."""
    path = f"{model_dir.rstrip('/')}/{OPERATIVE_CONFIG}"
    write_atomically(path, gin.operative_config_str())
    return path
