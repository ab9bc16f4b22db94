"""Lengths a recipe writes in steps, epochs or examples (big_vision's `u.steps`), as steps.

`train.steps`, `train.epochs` or `train.examples`; `evaluation.every_steps` / `every_epochs` /
`every_examples`; `learning_rate.warmup_steps` / `warmup_epochs` / `warmup_examples`. At most
one spelling of a length is set; epochs need the dataset size, steps and examples never do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from models.core.errors import UsageError


@dataclass(frozen=True)
class Clock:
    """Converts epochs and examples to steps for one run: global batch and epoch length."""

    global_batch_size: int
    steps_per_epoch: int | None  # None: the dataset's size is unknown (train by steps)

    def steps(
        self,
        names: tuple[str, str, str],
        steps: float | None,
        epochs: float | None,
        examples: float | None,
        round_up: bool = False,
    ) -> int | None:
        """The length in steps, or None when none of the three is set.

        names are the gin names of (steps, epochs, examples), for the error lines."""
        given = [
            (n, v) for n, v in zip(names, (steps, epochs, examples), strict=True) if v is not None
        ]
        if not given:
            return None
        for name, value in given:  # a bad value first: "both set" would hide it
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise UsageError(f"{name}={value!r}: expected a number >= 0")
        if len(given) > 1:
            both = " and ".join(n for n, _ in given)
            flags = ", or --steps=N / --epochs=N" if names[0] == "train.steps" else ""
            raise UsageError(
                f"{both} are both set: give one of them (e.g. --gin_param='{given[0][0]} = None'"
                f"{flags})"
            )
        name, value = given[0]
        rounding: Callable[[float], float] = math.ceil if round_up else round
        if name == names[0]:
            return int(rounding(value))
        if name == names[2]:
            return int(rounding(value / self.global_batch_size))
        if self.steps_per_epoch is None:
            raise UsageError(
                f"{name} needs the dataset's size, which this dataset does not give: "
                f"set {names[0]} (or {names[2]}) instead"
            )
        return int(rounding(value * self.steps_per_epoch))

    def epoch(self, step: int) -> float | None:
        """Epochs done after `step` steps (None when the epoch length is unknown)."""
        if self.steps_per_epoch is None:
            return None
        return round(step / self.steps_per_epoch, 3)
