"""Compute precision: float32, or bfloat16 activations with float32 variables and logits."""

import tf_keras

POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}


def set_precision(precision: str) -> None:
    """Sets the global Keras policy; models keep logits and losses in float32."""
    tf_keras.mixed_precision.set_global_policy(POLICIES[precision])
