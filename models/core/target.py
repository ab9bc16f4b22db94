"""Time-to-accuracy targets: a metric, a value and which way is better (WER, FID: lower)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """Stop when `metric` reaches `value`: >= it when higher is better, <= it when lower is."""

    metric: str
    value: float
    lower_is_better: bool = False

    @property
    def comparison(self) -> str:
        return "<=" if self.lower_is_better else ">="

    @property
    def direction(self) -> str:
        """'lower' or 'higher': which way is better, as run records write it."""
        return "lower" if self.lower_is_better else "higher"

    def reached(self, value: float) -> bool:
        return value <= self.value if self.lower_is_better else value >= self.value

    def __str__(self) -> str:
        return f"{self.metric} {self.comparison} {self.value:g}"
