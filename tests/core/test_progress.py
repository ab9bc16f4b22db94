"""Progress lines while a run would otherwise be silent (a long traced loop, a long evaluation)."""

from __future__ import annotations

import threading

from models.core.progress import ProgressTicker, TrainingPace


def test_a_line_comes_after_a_silent_stretch_and_not_after_the_runs_own(capsys):
    with ProgressTicker(lambda: "tick", every_s=0.2) as ticker:
        threading.Event().wait(0.5)
        ticks = capsys.readouterr().out.splitlines()
        for _ in range(10):  # the run keeps printing its own lines: no tick between them
            ticker.touch()
            threading.Event().wait(0.05)
    assert ticks and set(ticks) == {"tick"}
    assert capsys.readouterr().out == ""


def test_the_training_pace_says_the_rate_and_the_time_left():
    steps = iter([100, 100, 300, 300])
    pace = TrainingPace(lambda: next(steps), total_steps=1100, global_batch_size=64)
    pace._mark = (pace._mark[0] - 10.0, pace._mark[1])  # 10 s since the first reading
    assert pace() == "step 100/1100"  # no step since: nothing to measure
    line = pace()
    assert line.startswith("step 300/1100 | ") and line.endswith(" left")
    assert "about " in line and "examples/s" in line
