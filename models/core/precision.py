"""Compute precision: float32, or bfloat16 activations with float32 variables and logits."""

import tensorflow as tf
import tf_keras

POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
DTYPES = {"float32": tf.float32, "bfloat16": tf.bfloat16}  # Each precision's compute dtype.


def set_precision(precision: str) -> None:
    """Sets the global Keras policy; models keep logits and losses in float32."""
    tf_keras.mixed_precision.set_global_policy(POLICIES[precision])
