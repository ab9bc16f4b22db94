"""The Cloud TPU Pod reference-model zoo. `create_model` and `list_models` are the one-line API."""

import os

# C++ logs (including a cuInit error on machines without a GPU) would bury our one-line errors.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from models.registry import create_model, list_models, list_recipes  # noqa: E402

__all__ = ["create_model", "list_models", "list_recipes"]
