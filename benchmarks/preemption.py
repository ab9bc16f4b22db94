"""How fast a run stops on SIGTERM, sent at a random moment of its training or of an
evaluation, and whether the rerun resumes where it stopped (README, "Preemption").

    python -m benchmarks.preemption --recipe=deeplab/default --phase=train [--trials=5]
    python -m benchmarks.preemption --recipe=transformer/default --phase=eval

Each trial runs the recipe (`--mode=train_and_eval`) in a fresh model_dir under --out. With
--phase=train, SIGTERM comes at a random moment of the first --window_s seconds after the
first loop starts; with --phase=eval, of the first evaluation's first --window_s seconds
(`train.steps` etc. unchanged; --eval_after_steps makes that evaluation come early, and
--from_model_dir/--from_step start each trial from a trained checkpoint, whose evaluation
takes as long as a real one: an untrained Transformer's beam search ends at once). It
records the seconds from SIGTERM to the process's exit, the exit code, and the step saved;
then it reruns the same command until the rerun says it resumed from that step (and, with
--phase=eval, until it restarts the interrupted evaluation), and stops the rerun the same way.
"""

from __future__ import annotations

import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from absl import flags

from benchmarks.output import format_number, progress, run_cli
from models.core.errors import UsageError

FLAGS = flags.FLAGS
LOOP_START = re.compile(r"train \| step:\s+\d+ \| training until")
EVAL_START = re.compile(r"eval \| step:\s+(\d+) \| running")
SAVED = re.compile(r"SIGTERM: (?:checkpoint saved at step (\d+)|nothing was saved)")
RESUMED = re.compile(r"resumed from checkpoint at step (\d+)")


def define_flags() -> None:
    flags.DEFINE_string("recipe", "resnet/default", "Recipe to run (configs/<family>/<name>).")
    flags.DEFINE_enum("phase", "train", ["train", "eval"], "When SIGTERM comes.")
    flags.DEFINE_integer("trials", 5, "How many runs to stop.")
    flags.DEFINE_float("window_s", 30.0, "SIGTERM comes at a uniform moment of this window.")
    flags.DEFINE_integer("eval_after_steps", 0, "Evaluate every N steps (the first: N on).")
    flags.DEFINE_string("slice", "cpu-1", "The runs' --slice.")
    flags.DEFINE_string(
        "from_model_dir", None, "Start each trial from a checkpoint of this run (--from_step)."
    )
    flags.DEFINE_integer("from_step", None, "The step of --from_model_dir's checkpoint.")
    flags.DEFINE_integer("seed", 0, "Seeds the random moments.")
    flags.DEFINE_string("out", "runs/preemption", "Directory for the trials' model_dirs.")
    flags.DEFINE_integer("timeout_s", 1800, "A trial still going after this fails.")


class Process:
    """A CLI run whose output lines are collected as they come."""

    def __init__(self, command: list[str]):
        self.lines: list[str] = []
        self.popen = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: re.Pattern, deadline: float) -> re.Match:
        """The first line matching `pattern`; UsageError if the run ends or time runs out."""
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := pattern.search(line):
                    return match
            if self.popen.poll() is not None:
                self._reader.join(5)
                tail = "\n".join(self.lines[-5:])
                raise UsageError(f"the run ended before '{pattern.pattern}':\n{tail}")
            time.sleep(0.05)
        raise UsageError(f"no line matched '{pattern.pattern}' in time")

    def stop(self, deadline: float) -> tuple[float, int]:
        """(seconds from SIGTERM to exit, exit code)."""
        sent = time.monotonic()
        self.popen.send_signal(signal.SIGTERM)
        code = self.popen.wait(timeout=max(deadline - sent, 1))
        self._reader.join(5)
        return time.monotonic() - sent, code


def command(model_dir: Path) -> list[str]:
    family, _ = FLAGS.recipe.split("/", 1)
    args = [sys.executable, "-m", f"models.{family}", f"--model_dir={model_dir}"]
    args += [f"--gin_file={FLAGS.recipe}.gin", "--mode=train_and_eval", f"--slice={FLAGS.slice}"]
    if FLAGS.eval_after_steps:
        args.append(f"--gin_param=evaluation.every_steps = {FLAGS.eval_after_steps}")
        args.append("--gin_param=evaluation.every_epochs = None")
        args.append("--gin_param=evaluation.every_examples = None")
    return args


def trial(index: int, rng: random.Random) -> dict:
    """One run stopped at a random moment, then its rerun stopped once it has resumed."""
    model_dir = Path(FLAGS.out) / FLAGS.recipe / f"trial-{index}"
    shutil.rmtree(model_dir, ignore_errors=True)
    if FLAGS.from_model_dir:  # a trained state: a later evaluation is a longer one
        model_dir.mkdir(parents=True)
        for path in Path(FLAGS.from_model_dir).glob(f"ckpt-{FLAGS.from_step}.*"):
            shutil.copy(path, model_dir)
    deadline = time.monotonic() + FLAGS.timeout_s
    run = Process(command(model_dir))
    started = run.wait_for(EVAL_START if FLAGS.phase == "eval" else LOOP_START, deadline)
    delay = rng.uniform(0, FLAGS.window_s)
    time.sleep(delay)
    seconds, code = run.stop(deadline)
    (model_dir / "stopped-run.log").write_text("\n".join(run.lines) + "\n")
    saved = next((int(m.group(1) or 0) for line in run.lines if (m := SAVED.search(line))), None)
    result = {"trial": index, "delay_s": delay, "stop_s": seconds, "exit_code": code}
    result["saved_step"] = saved
    if FLAGS.phase == "eval":  # the evaluation was still running when SIGTERM came
        result["in_evaluation"] = saved == int(started.group(1))
    if saved is None:
        return {**result, "resumed": False, "note": (run.lines or [""])[-1][:200]}
    if saved == 0:  # stopped before its first step ended: a rerun starts afresh
        return {**result, "resumed": None}
    rerun = Process(command(model_dir))
    resumed = int(rerun.wait_for(RESUMED, deadline).group(1))
    if FLAGS.phase == "eval":  # the interrupted evaluation runs again, at the saved step
        rerun.wait_for(re.compile(rf"eval \| step:\s+{saved} \| running"), deadline)
    result["rerun_stop_s"], result["rerun_exit_code"] = rerun.stop(deadline)
    return {**result, "resumed": resumed == saved}


def compute(argv: list[str]) -> dict:
    if FLAGS.trials < 1 or FLAGS.window_s < 0:
        raise UsageError("--trials must be at least 1 and --window_s not negative")
    if FLAGS.from_model_dir and not list(
        Path(FLAGS.from_model_dir).glob(f"ckpt-{FLAGS.from_step}.index")
    ):
        raise UsageError(f"--from_model_dir={FLAGS.from_model_dir} has no ckpt-{FLAGS.from_step}")
    rng = random.Random(FLAGS.seed)
    trials = []
    for index in range(FLAGS.trials):
        trials.append(trial(index, rng))
        progress(render_trial(trials[-1]))
    return {"recipe": FLAGS.recipe, "phase": FLAGS.phase, "trials": trials}


RESUMED_TEXT = {True: "yes", False: "NO", None: "nothing to resume (before step 1)"}


def render_trial(t: dict) -> str:
    return (
        f"trial {t['trial']}: SIGTERM {format_number(t['delay_s'], '.1f')} s in -> exit "
        f"{t['exit_code']} after {format_number(t['stop_s'], '.1f')} s, saved step "
        f"{t['saved_step']}, rerun resumed there: {RESUMED_TEXT[t['resumed']]}"
    )


def render(result: dict) -> str:
    rows = ["| trial | SIGTERM at (s) | exit | stop took (s) | step saved | rerun resumed |"]
    rows.append("|---|---|---|---|---|---|")
    for t in result["trials"]:
        during = {True: " (mid-evaluation)", False: " (after the evaluation)"}
        rows.append(
            f"| {t['trial']} | {t['delay_s']:.1f} | {t['exit_code']} | {t['stop_s']:.1f} | "
            f"{t['saved_step']}{during.get(t.get('in_evaluation'), '')} | "
            f"{RESUMED_TEXT[t['resumed']]} |"
        )
    worst = max(t["stop_s"] for t in result["trials"])
    return (
        f"{result['recipe']}, SIGTERM during {result['phase']}:\n"
        + "\n".join(rows)
        + (f"\nslowest stop: {worst:.1f} s")
    )


def exit_code(result: dict) -> int:
    """1 unless every trial exited 143, mid-evaluation with --phase=eval, and its rerun
    resumed at the saved step."""
    good = all(
        t["exit_code"] == 143 and t["resumed"] is not False and t.get("in_evaluation", True)
        for t in result["trials"]
    )
    return 0 if good else 1


def main() -> None:
    define_flags()
    run_cli("preemption", compute, render, exit_code=exit_code)


if __name__ == "__main__":
    main()
