"""The Cloud TPU Pod reference-model zoo. `create_model` and `list_models` are the one-line API."""

import os

# C++ logs (including a cuInit error on machines without a GPU) would bury our one-line errors.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# tf_keras is the zoo's Keras and Model Garden's: TensorFlow's import then loads it, not Keras 3
# (2.2 s a process on 2026-12-03; TensorFlow's own Keras alias, never used here, names tf_keras).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from models.core.registry import create_model, list_models, list_recipes  # noqa: E402

__all__ = ["create_model", "list_models", "list_recipes"]
