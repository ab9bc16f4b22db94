"""SavedModel export with the task's serving signatures (e.g. encoded image bytes in)."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf
from tf_keras.src.saving.legacy.saved_model.utils import keras_option_scope

from models.core.errors import UsageError
from models.core.task import Models, Task


def export_saved_model(task: Task, models: Models, model_dir: str, step: int) -> str:
    """Writes model_dir/export/<step> atomically and returns its path."""
    signatures = task.serving_signatures(models)
    if not signatures:
        raise UsageError(f"--mode=export: {type(task).__name__} has no serving signature")
    module = tf.Module()
    module.models = models
    for name, function in signatures.items():
        setattr(module, f"serve_{name}", function)
    final = f"{model_dir.rstrip('/')}/export/{step}"
    tmp = final + ".tmp"
    if tf.io.gfile.exists(tmp):
        tf.io.gfile.rmtree(tmp)
    with keras_option_scope(save_traces=False):  # the signatures are the export's interface
        tf.saved_model.save(module, tmp, signatures=signatures)
    if tf.io.gfile.exists(final):
        tf.io.gfile.rmtree(final)
    tf.io.gfile.rename(tmp, final)
    print(f"exported SavedModel to {final}", flush=True)
    return final


def image_bytes_signature(
    predict: Callable[[tf.Tensor], dict], empty: Callable[[], dict]
) -> tf.types.experimental.Function:
    """A serving function of a batch of encoded images ([None] strings, "image_bytes"):
    `predict(image_bytes)`, or `empty()` (the same outputs with no rows) for an empty batch."""

    # Plain TensorFlow (tf.cond, tf.map_fn): AutoGraph would convert every layer the model calls.
    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")], autograph=False
    )
    def serve(image_bytes):
        return tf.cond(tf.size(image_bytes) > 0, lambda: predict(image_bytes), empty)

    return serve
