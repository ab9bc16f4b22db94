"""Checkpoints that survive preemption: interval saves, resume, NaN abort, cluster SIGTERM."""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterator

import tensorflow as tf

from models.core.errors import UsageError, first_line
from models.core.records import trained_by


class TrainingAborted(Exception):
    """Training cannot go on (non-finite loss); the last good checkpoint is kept."""


class Preempted(Exception):
    """SIGTERM (or Ctrl-C: SIGINT) arrived; a checkpoint was saved at `step`."""

    def __init__(self, step: int, signum: int = signal.SIGTERM):
        super().__init__(step)
        self.step, self.signum = step, signum


_STEP = re.compile(r"/ckpt-(\d+)\.(?:index|data-\d+-of-\d+)$")


class ResumingCheckpointManager(tf.train.CheckpointManager):
    """A CheckpointManager that resumes from `resume_from` (found by `resume_point`), not
    from whatever the state file says: a damaged or stale state file must not restart
    training at step 0, whose saves would overwrite the intact checkpoints."""

    def __init__(self, checkpoint: tf.train.Checkpoint, directory: str, resume_from, **kwargs):
        try:
            with quiet_tensorflow():  # a damaged state file makes TensorFlow warn
                super().__init__(checkpoint, directory, **kwargs)
        except (UnicodeDecodeError, ValueError):  # a state file that is garbage, or empty
            with tempfile.TemporaryDirectory() as empty:
                super().__init__(checkpoint, empty, **kwargs)
            self._directory = directory
            self._checkpoint_prefix = os.path.join(directory, kwargs.get("checkpoint_name", "ckpt"))
        self._latest_checkpoint = resume_from

    @property
    def latest_checkpoint(self) -> str | None:
        return self._latest_checkpoint

    def restore_or_initialize(self) -> str | None:
        """As TensorFlow's, but strict: a checkpoint that leaves a built variable unrestored
        (another model's) raises ValueError (checkpoint_must_fit: one line), where TensorFlow
        would resume "from" it with freshly initialised weights."""
        if self._latest_checkpoint is None:
            return super().restore_or_initialize()
        restore_built(self._checkpoint, self._latest_checkpoint)
        if self._checkpoint_interval is not None:
            self._last_checkpoint_step = int(self._step_counter.numpy())
        return self._latest_checkpoint

    def save(self, checkpoint_number=None, check_interval: bool = True, options=None):
        """Saves; a save that fails (a full disk) removes what it wrote and says which
        checkpoint the run would resume from."""
        before = set(tf.io.gfile.glob(f"{self._checkpoint_prefix}-*"))
        try:
            return super().save(checkpoint_number, check_interval, options)
        except (tf.errors.OpError, OSError) as error:
            for path in set(tf.io.gfile.glob(f"{self._checkpoint_prefix}-*")) - before:
                _remove(path)
            reason = first_line(error)
            if "No space left on device" in reason:  # TensorFlow names its own temp file
                reason = "no space left on device"
            kept = (intact_checkpoints(self.directory) or [None])[-1]
            resume = f"rerun to resume from {kept}" if kept else "rerun to start afresh"
            raise UsageError(
                f"cannot save a checkpoint in {self.directory} ({reason}); nothing of it was "
                f"kept: free space or fix the directory, then {resume}"
            ) from None


def _remove(path: str) -> None:
    """Deletes a file or a directory tree, whatever is left of it."""
    with contextlib.suppress(tf.errors.OpError, OSError):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)


def build_manager(
    model_dir: str,
    global_step: tf.Variable,
    interval: int,
    max_to_keep: int,
    init_fn: Callable[[], None] | None = None,
    **trackables,
) -> tf.train.CheckpointManager:
    """A CheckpointManager over every model and optimiser; saves are atomic (temp + rename).
    It resumes from `resume_point(model_dir)`; `init_fn` runs instead when there is none."""
    checkpoint = tf.train.Checkpoint(global_step=global_step, **trackables)
    resume_from, note = resume_point(model_dir)
    if note:
        print(note, flush=True)
    return ResumingCheckpointManager(
        checkpoint,
        model_dir,
        resume_from,
        max_to_keep=max_to_keep,
        step_counter=global_step,
        checkpoint_interval=interval,
        init_fn=init_fn,
    )


@contextlib.contextmanager
def quiet_tensorflow() -> Iterator[None]:
    """TensorFlow's Python logger at ERROR for the block."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def intact_checkpoints(model_dir: str) -> list[str]:
    """The ckpt-<step> prefixes in model_dir whose index and every data shard exist, by step."""
    return [prefix for prefix in _checkpoint_prefixes(model_dir) if _is_complete(prefix)]


def _checkpoint_prefixes(model_dir: str) -> list[str]:
    """Every ckpt-<step> prefix with at least one file in model_dir, by step."""
    steps = set()
    for path in tf.io.gfile.glob(f"{model_dir.rstrip('/')}/ckpt-*"):
        match = _STEP.search(path)
        if match:
            steps.add(int(match.group(1)))
    return [f"{model_dir.rstrip('/')}/ckpt-{step}" for step in sorted(steps)]


def _is_complete(prefix: str) -> bool:
    shards = tf.io.gfile.glob(f"{prefix}.data-*-of-*")
    complete = bool(shards) and len(shards) == int(shards[0].rsplit("-of-", 1)[1])
    return complete and tf.io.gfile.exists(f"{prefix}.index")


def resume_point(model_dir: str) -> tuple[str | None, str | None]:
    """(the checkpoint a run in model_dir resumes from, a note when the state file was not
    trusted): the newest checkpoint found from the files themselves. When its .index or a
    .data file is missing, UsageError: resuming from an older one or from scratch would
    overwrite it."""
    prefixes = _checkpoint_prefixes(model_dir)
    if not prefixes:
        return None, None
    newest = prefixes[-1]
    if not _is_complete(newest):
        older = [p.rsplit("/", 1)[-1] for p in prefixes[:-1] if _is_complete(p)]
        instead = f", or delete its files to resume from {older[-1]}" if older else ""
        raise UsageError(
            f"--model_dir={model_dir}: checkpoint {newest.rsplit('/', 1)[-1]} is incomplete (its "
            f".index or a .data file is missing); restore the missing file{instead}, or use a "
            "fresh --model_dir"
        )
    _check_readable(newest, prefixes[:-1])
    named, state = _state_latest(model_dir), f"{model_dir.rstrip('/')}/checkpoint"
    if named == newest:
        return newest, None
    if named is not None and _is_complete(named):
        return newest, f"resuming from {newest}, newer than the checkpoint state file's {named}"
    if named is not None:
        why = f"names {named}, which is missing or incomplete"
    elif tf.io.gfile.exists(state):
        why = "is damaged"
    else:
        why = "is missing"
    return newest, f"the checkpoint state file {state} {why}; resuming from {newest}"


def _check_readable(prefix: str, older: list[str]) -> None:
    """UsageError naming the checkpoint when its .index cannot be read (empty, cut short,
    damaged): resuming from an older one would overwrite it, so the user decides."""
    try:
        with quiet_tensorflow():
            tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, RuntimeError, ValueError) as error:
        intact = [p.rsplit("/", 1)[-1] for p in older if _is_complete(p)]
        instead = f", or delete its files to resume from {intact[-1]}" if intact else ""
        raise UsageError(
            f"checkpoint {prefix}.index cannot be read ({first_line(error)}); restore an intact "
            f"copy{instead}, or use a fresh --model_dir"
        ) from None


def new_checkpoints(model_dir: str, timeout_s: float, check: Callable[[], None]) -> Iterator[str]:
    """Each new checkpoint in model_dir as it appears, until none has appeared for
    `timeout_s`; `check` runs every second of waiting (a stop flag's check raises)."""
    last = time.monotonic()

    def give_up() -> bool:
        check()
        return time.monotonic() - last > timeout_s

    for path in tf.train.checkpoints_iterator(model_dir, timeout=1, timeout_fn=give_up):
        yield path
        last = time.monotonic()


def _state_latest(model_dir: str) -> str | None:
    """The latest checkpoint the state file names (a full prefix), or None."""
    try:
        with quiet_tensorflow():
            state = tf.train.get_checkpoint_state(model_dir)
    except (tf.errors.OpError, ValueError, UnicodeDecodeError):
        return None
    if state is None or not state.model_checkpoint_path:
        return None
    return f"{model_dir.rstrip('/')}/{state.model_checkpoint_path.rsplit('/', 1)[-1]}"


@contextlib.contextmanager
def checkpoint_must_fit(model_dir: str):
    """A checkpoint in model_dir that does not fit the built model (another model or recipe)
    or cannot be read becomes one UsageError line; the checkpoint is left as it is."""
    try:
        yield
    except (ValueError, tf.errors.InvalidArgumentError) as error:
        writer = trained_by(model_dir)
        what = f"(written by a {writer} run) " if writer else ""
        what += "does not fit this model and recipe"
        fix = "use the recipe that wrote it, or a fresh --model_dir"
        raise _unusable(model_dir, error, what, fix) from None
    except (tf.errors.OpError, RuntimeError, IndexError) as error:  # checksums, short files
        older = intact_checkpoints(model_dir)[-2:-1]
        instead = f", delete its files to resume from {older[0]}" if older else ""
        fix = f"restore an intact copy{instead}, or use a fresh --model_dir"
        raise _unusable(model_dir, error, "cannot be read", fix) from None


def restore_built(checkpoint: tf.train.Checkpoint, path: str) -> None:
    """Restores path for evaluation or export, where every variable already built must come
    from it: a checkpoint of another model would otherwise leave the weights as initialised
    and be evaluated or exported without a word. Raises ValueError when one does not."""
    status = checkpoint.restore(path).expect_partial()
    try:
        status.assert_existing_objects_matched()
    except AssertionError:
        raise ValueError("the built model's variables are not all in it") from None


def _unusable(model_dir: str, error: Exception, what: str, fix: str) -> Exception:
    latest = (intact_checkpoints(model_dir) or [None])[-1]
    if latest is None:
        return error
    tf.get_logger().setLevel("ERROR")  # else the failed restore warns at exit, per value
    reason = first_line(error)
    return UsageError(f"--model_dir={model_dir}: checkpoint {latest} {what} ({reason}); {fix}")


class NanGuard:
    """orbit train action: aborts before the loop's checkpoint when a train log (a loss) is
    NaN/Inf."""

    def __init__(self, global_step: tf.Variable):
        self.global_step = global_step

    def __call__(self, output: dict) -> None:
        for name, value in output.items():
            if not math.isfinite(float(value)):
                raise TrainingAborted(
                    f"{name} is {float(value)} at step {int(self.global_step.numpy())}: "
                    "training diverged; the last good checkpoint is kept (lower the learning "
                    "rate or check the data)"
                )


class ClusterPreemption:
    """orbit train action for multi-worker runs: TensorFlow's PreemptionCheckpointHandler.

    A SIGTERM on any worker makes every worker save at the same step (the handler agrees on
    it through the coordination service); then the run stops as a Preempted one (exit 143).
    Create it under the strategy scope, after restoring the chief's latest checkpoint."""

    def __init__(self, strategy, manager: tf.train.CheckpointManager, global_step: tf.Variable):
        self.global_step = global_step
        config = tf.distribute.experimental.TerminationConfig(exit_fn=self._stop)
        self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            strategy.cluster_resolver, manager, termination_config=config
        )

    def _stop(self) -> None:
        raise Preempted(int(self.global_step.numpy()))

    def __call__(self, output: dict | None = None) -> None:
        step = int(self.global_step.numpy())
        self.handler.save_checkpoint_if_preempted(checkpoint_number=step, check_interval=False)
