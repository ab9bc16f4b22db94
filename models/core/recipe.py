"""What a recipe trains, wired in gin (t5x-style): its task and its registered model variant.

run.task = @ImageClassificationTask
run.model = "resnet50"
"""

from __future__ import annotations

from dataclasses import dataclass

import gin

from models.core.errors import UsageError
from models.core.gin_types import check_field_types
from models.core.task import Task


@gin.configurable("run")
@dataclass(frozen=True)
class RunSpec:
    """The recipe's task class and model variant (a name in the model registry)."""

    task: type[Task] | None = None
    model: str | None = None

    def __post_init__(self):
        check_field_types(self, "run")

    def check(self) -> RunSpec:
        """UsageError unless the recipe named both a Task class and a variant."""
        if self.task is None or self.model is None:
            missing = "run.task" if self.task is None else "run.model"
            raise UsageError(
                f"the recipe does not set {missing} (e.g. run.task = @ImageClassificationTask, "
                'run.model = "resnet50")'
            )
        if not (isinstance(self.task, type) and issubclass(self.task, Task)):
            raise UsageError(f"run.task = {self.task!r} is not a Task class")
        if not isinstance(self.model, str):
            raise UsageError(f"run.model = {self.model!r}: expected a model name")
        return self
