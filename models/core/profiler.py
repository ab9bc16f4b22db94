"""--profile_steps=START,END: a TensorBoard profile of those training steps."""

from __future__ import annotations

import tensorflow as tf

from models.core.errors import UsageError


class Profiler:
    """Starts the TF profiler at the first loop boundary >= START, stops at the next >= END.

    Steps run in loops of train.steps_per_loop, so the profile covers whole loops."""

    def __init__(self, steps: str | None, logdir: str):
        self.logdir, self.running = logdir, False
        self.start = self.end = None
        if steps:
            try:
                self.start, self.end = (int(x) for x in steps.split(","))
            except ValueError:
                raise UsageError(f"--profile_steps={steps}: expected START,END") from None
            if not 0 <= self.start < self.end:
                raise UsageError(f"--profile_steps={steps}: need 0 <= START < END")

    def at_step(self, step: int) -> None:
        if self.start is None:
            return
        if not self.running and step >= self.start:
            tf.profiler.experimental.start(self.logdir)
            self.running = True
        elif self.running and step >= self.end:
            tf.profiler.experimental.stop()
            self.running = False
            self.start = None
            print(f"profile written to {self.logdir}", flush=True)
