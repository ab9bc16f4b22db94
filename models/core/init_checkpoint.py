"""`train.init_checkpoint`: weights from another run before step 0 (never on resume).

Detection and segmentation start their backbone from a classification run, fine-tuning
starts from a pretraining run: `train.init_checkpoint = "/runs/r50"` (a model_dir or a
checkpoint prefix such as `/runs/r50/ckpt-5000`) and `train.init_checkpoint_modules =
("model/backbone",)`: `<model name>[/<attribute>...]`, resolved by attribute on both sides
(default: every model, whole). Only those weights are read; optimiser state is not.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from models.core.checkpoint import resume_point
from models.core.errors import UsageError, first_line, nearest
from models.core.task import Models

_Tree = dict[str, "tf.Module | _Tree"]


def resolve_checkpoint(path: str) -> str:
    """The checkpoint prefix `path` names (a directory: its latest checkpoint)."""
    owner = f"train.init_checkpoint={path}"
    if tf.io.gfile.isdir(path):
        latest, _ = resume_point(path)
        if latest is None:
            raise UsageError(f"{owner}: no checkpoint in that directory")
        return latest
    if not tf.io.gfile.exists(f"{path}.index"):
        raise UsageError(f"{owner}: no such checkpoint (neither a directory nor a prefix)")
    return path


def _child_name(parent: object, child: object) -> str:
    """The name under which `parent` tracks `child` in checkpoints (e.g. `_backbone`)."""
    children = tf.train.TrackableView(parent).children(parent)
    return next(name for name, value in children.items() if value is child)


def _insert(tree: _Tree, models: Models, module: str) -> None:
    """Adds `module` (`model/backbone`) to the tree of checkpoint names to restore."""
    name, *attributes = module.strip("/").split("/")
    if name not in models:
        raise UsageError(
            f"train.init_checkpoint_modules: '{module}' names no model{nearest(name, models)} "
            f"(models: {', '.join(models)})"
        )
    node, parent = tree, models[name]
    if not attributes:
        tree[name] = parent
        return
    node = node.setdefault(name, {})
    for index, attribute in enumerate(attributes):
        child = getattr(parent, attribute, None)
        if not isinstance(child, tf.Module):
            raise UsageError(f"train.init_checkpoint_modules: '{module}': no module '{attribute}'")
        key = _child_name(parent, child)
        if index == len(attributes) - 1:
            node[key] = child
        else:
            node = node.setdefault(key, {})
        parent = child


def _as_checkpoint(tree: _Tree) -> tf.train.Checkpoint:
    return tf.train.Checkpoint(
        **{k: _as_checkpoint(v) if isinstance(v, dict) else v for k, v in tree.items()}
    )


def restore_init_checkpoint(path: str, modules: Sequence[str], models: Models) -> str:
    """Restores `modules` (default: every model) from the checkpoint at `path`; one
    UsageError line when the path, a module or a shape does not fit. Returns a summary."""
    prefix = resolve_checkpoint(path)
    tree: _Tree = {}
    for module in modules or list(models):
        _insert(tree, models, module)
    try:
        status = _as_checkpoint(tree).restore(prefix)
        status.expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as error:
        tf.get_logger().setLevel("ERROR")  # else the failed restore warns at exit, per value
        raise UsageError(
            f"train.init_checkpoint={path}: cannot restore {', '.join(modules or models)} "
            f"from {prefix}: {first_line(error)}"
        ) from None
    return f"initialised {', '.join(modules or models)} from {prefix}"
