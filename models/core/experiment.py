"""Runs one experiment: build strategy, task and models, then train/eval/export with orbit."""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from dataclasses import dataclass

import orbit
import tensorflow as tf

from models.core import checkpoint as ckpt
from models.core import gin_config
from models.core.cluster import is_chief, is_multi_worker
from models.core.errors import Stopped, UsageError, nearest
from models.core.export import export_saved_model
from models.core.init_checkpoint import resolve_checkpoint, restore_init_checkpoint
from models.core.predict import predict_audio, predict_image, predict_samples, predict_text
from models.core.profiler import Profiler
from models.core.progress import ProgressTicker, TrainingPace
from models.core.records import RunInfo, RunRecorder, describe_accelerator
from models.core.service_watch import DispatcherWatch
from models.core.settings import DEFAULT_EVALUATION, EvalPlan, StepPlan, TrainSettings
from models.core.stop import StopFlag, StopRequested
from models.core.strategy import check_jit_compile
from models.core.target import Target
from models.core.task import Task
from models.core.trainer import Evaluator, Trainer, build_training_state

EVALUATING_MODES = ("eval", "train_and_eval", "continuous_eval")
TRAINING_MODES = ("train", "train_and_eval")
_ALSO = "train.also_reach"


@dataclass
class RunOptions:
    """What the shared flags say, after parsing."""

    model_dir: str
    mode: str
    model_name: str
    family: str
    recipe: str
    slice_name: str
    precision: str
    seed: int
    profile_steps: str | None = None
    tf_data_service: str | None = None
    tf_data_service_timeout_s: float = 300.0
    image: str | None = None  # --mode=predict
    text: str | None = None  # --mode=predict --input
    num_images: int | None = None  # --mode=predict --num_images (generative models)
    audio: str | None = None  # --mode=predict --audio (speech recognition)
    output: str | None = None


class Experiment:
    """Holds everything one run builds; `run()` dispatches on the mode."""

    def __init__(self, task: Task, strategy, settings: TrainSettings, options: RunOptions):
        self.task, self.strategy, self.settings, self.options = task, strategy, settings, options
        settings.check(strategy.num_replicas_in_sync)
        check_jit_compile(settings.jit_compile, strategy)
        self.chief = is_chief(strategy)
        self.training = options.mode in TRAINING_MODES
        if self.training and settings.init_checkpoint:
            resolve_checkpoint(settings.init_checkpoint)  # a wrong path fails before building
        if settings.synthetic_input and options.mode != "train":
            raise UsageError("train.synthetic_input trains on made-up data: use --mode=train")
        if not settings.synthetic_input and options.mode != "export":
            task.validate_data(self._splits_read())
        self.sizes = self._sizes_if_known if settings.synthetic_input else task.num_examples
        # Modes that read no training data (eval of a test-only folder) need its size only for
        # lengths in epochs
        train_size = self.sizes("train") if self.training else self._sizes_if_known("train")
        self.plan = StepPlan.make(settings, train_size, self.sizes)
        self.target = self._target()
        self.also_reach = self._also_reach()
        self.state = build_training_state(task, strategy, self.plan)
        self.models, self.optimizers = self.state.models, self.state.optimizers
        self.global_step, self.averages = self.state.global_step, self.state.averages
        # Non-chief workers must write their (collective) saves somewhere else: a temp dir.
        self.checkpoint_dir = options.model_dir if self.chief else tempfile.mkdtemp("-zoo-worker")
        self.manager = ckpt.build_manager(
            self.checkpoint_dir,
            self.global_step,
            self.plan.checkpoint_interval,
            settings.max_checkpoints_to_keep if self.chief else 1,
            init_fn=self._initialise if self.training and settings.init_checkpoint else None,
            **self.models,
            **{f"optimizer_{k}": v for k, v in self.optimizers.items()},
            **{f"average_{k}": v.averages for k, v in self.averages.items()},
        )
        # Single-process runs stop between steps; a cluster's workers must agree on the step
        self.stop = None if is_multi_worker(strategy) else StopFlag.install()
        self.trainer = self._build_trainer() if self.training else None
        self.evaluators = self._build_evaluators()
        self.preemption = None if self.stop else self._cluster_preemption()
        self.profiler = Profiler(options.profile_steps, f"{options.model_dir}/profile")
        with ckpt.checkpoint_must_fit(options.model_dir):  # before the recorder writes
            self.controller = self._build_controller() if self.trainer else None
        self.recorder = self._build_recorder()
        self.eval_controllers = {n: self._eval_controller(e) for n, e in self.evaluators.items()}
        self._wrote_config = False
        self._train_logs: dict[str, float] = {}
        self._evaluating: Evaluator | None = None
        self._pace = None
        if self.training:
            read = lambda: int(self.global_step.numpy())  # noqa: E731
            self._pace = TrainingPace(read, self.plan.total_steps, settings.global_batch_size)
        self.ticker: ProgressTicker | None = None
        self._check_target_metric()

    # ------------------------------------------------------------------ building

    def _splits_read(self) -> list[str]:
        """The splits this mode reads: train when training, the evaluations' when evaluating."""
        splits = ["train"] if self.training else []
        if self.options.mode in EVALUATING_MODES:
            splits += sorted({e.split for e in self.settings.evaluations.values()} - {"train"})
        return splits

    def _sizes_if_known(self, split: str) -> int | None:
        """Split sizes for synthetic input, and the training split's outside training: the
        task's where it knows them (the recipe says, or the data is there), else None (then the
        recipe's lengths must be in steps or examples)."""
        try:
            return self.task.num_examples(split)
        except UsageError:
            return None

    def _target(self) -> Target | None:
        name, value = self.settings.target_metric, self.settings.target_value
        if name is None or value is None:
            return None
        return self._checked_target(name, value, f"--target_value={value:g}")

    def _also_reach(self) -> tuple[Target, ...]:
        """`train.also_reach`'s targets, which a run needs besides its own to stop."""
        if self.target is None:
            return ()
        also = (self.settings.also_reach or {}).items()
        return tuple(self._checked_target(n, v, f"{_ALSO}['{n}'] = {v:g}") for n, v in also)

    def _checked_target(self, name: str, value: float, setting: str) -> Target:
        """A target the metric's range admits (else UsageError naming `setting`)."""
        bounds = self.task.metric_range(name)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise UsageError(
                f"{setting}: {name} lies in [{bounds[0]:g}, {bounds[1]:g}], so "
                "the run could never reach it (accuracies are fractions: 0.97, not 97)"
            )
        return Target(name, float(value), self.task.is_lower_better(name))

    def _initialise(self) -> None:
        """CheckpointManager's init_fn: before step 0 only, never on resume."""
        settings = self.settings
        modules = tuple(settings.init_checkpoint_modules)
        message = restore_init_checkpoint(settings.init_checkpoint, modules, self.models)
        print(message, flush=True)

    def _cluster_preemption(self) -> ckpt.ClusterPreemption:
        """A cluster's SIGTERM handling: TensorFlow's PreemptionCheckpointHandler (every
        worker first restores the chief's latest checkpoint)."""
        latest, _ = ckpt.resume_point(self.options.model_dir)
        if latest:
            with ckpt.checkpoint_must_fit(self.options.model_dir):
                self.manager.checkpoint.restore(latest)
        with self.strategy.scope():
            return ckpt.ClusterPreemption(self.strategy, self.manager, self.global_step)

    def _check_target_metric(self) -> None:
        """A target on a metric no evaluation computes fails before any training (metrics
        computed outside the graph are known only after an evaluation)."""
        if self.target is None or not self.evaluators:
            return
        known = [name for e in self.evaluators.values() for name in e.metric_names()]
        scored_outside = type(self.task).reduce_aggregated_logs is not Task.reduce_aggregated_logs
        for target in (self.target, *self.also_reach):
            if target.metric not in known and not scored_outside:
                raise UsageError(
                    f"{self._naming(target)} is not an eval metric"
                    f"{nearest(target.metric, known)} (have: {', '.join(known)})"
                )

    def _naming(self, target: Target) -> str:
        """The setting that names `target`'s metric, for error lines."""
        if target is self.target:
            return f"--target_metric={target.metric}"
        return f"{_ALSO}['{target.metric}']"

    def _build_trainer(self) -> Trainer:
        settings = self.settings
        return Trainer(
            self.task,
            self.strategy,
            self.state,
            settings.global_batch_size,
            jit_compile=settings.jit_compile,
            data_service=self.options.tf_data_service,
            synthetic_input=settings.synthetic_input,
            stop=self.stop,
        )

    def _build_evaluators(self) -> dict[str, Evaluator]:
        if self.options.mode not in EVALUATING_MODES:
            return {}
        return {
            name: Evaluator(
                self.task,
                self.strategy,
                self.state,
                evaluation,
                self.settings.jit_compile,
                self.options.model_dir if self.chief else None,
                self.stop,
                mode="" if self.training else self.options.mode,
            )
            for name, evaluation in self.plan.evaluations.items()
        }

    def _build_recorder(self) -> RunRecorder:
        options, settings, target = self.options, self.settings, self.target
        info = RunInfo(
            model=options.model_name,
            family=options.family,
            recipe=options.recipe,
            slice=options.slice_name,
            replicas=self.strategy.num_replicas_in_sync,
            global_batch_size=settings.global_batch_size,
            precision=options.precision,
            seed=options.seed,
            target_metric=target.metric if target else None,
            target_value=target.value if target else None,
            target_direction=target.direction if target else None,
            also_reach={t.metric: t.value for t in self.also_reach} or None,
        )
        return RunRecorder(
            options.model_dir,
            info,
            self.plan,
            describe_accelerator(self.strategy),
            models=self.models,
            chief=self.chief and self.training,
        )

    def _summary_dir(self, name: str) -> str | None:
        return f"{self.options.model_dir}/summaries/{name}" if self.chief else None

    def _build_controller(self) -> orbit.Controller:
        """orbit's training loop; restores the latest checkpoint in model_dir if there is one
        (else runs the init checkpoint, if the recipe names one)."""
        return orbit.Controller(
            global_step=self.global_step,
            trainer=self.trainer,
            strategy=self.strategy,
            train_actions=[ckpt.NanGuard(self.global_step), self._after_loop]
            + ([self.preemption] if self.preemption else []),
            steps_per_loop=self.plan.steps_per_loop,
            checkpoint_manager=self.manager,
            summary_interval=self.plan.steps_per_loop,
            summary_dir=self._summary_dir("train"),
        )

    def _eval_controller(self, evaluator: Evaluator) -> orbit.Controller:
        """One evaluation's runner; it writes to summaries/eval (or eval_<name>)."""
        name = evaluator.evaluation.name
        folder = "eval" if name == DEFAULT_EVALUATION else f"eval_{name}"
        return orbit.Controller(
            global_step=self.global_step,
            evaluator=evaluator,
            strategy=self.strategy,
            eval_summary_dir=self._summary_dir(folder),
        )

    def _after_loop(self, output: dict) -> None:
        """Per-loop bookkeeping: train logs, operative config after the first loop, profiler."""
        self._train_logs = {k: float(v) for k, v in output.items()}
        self.recorder.train_progress(self._train_logs)
        self.ticker.touch()  # orbit printed the loop's line
        self.profiler.at_step(int(self.global_step.numpy()))
        if self.chief and not self._wrote_config:
            path = gin_config.write_operative_config(self.options.model_dir)
            with self.controller.summary_manager.summary_writer().as_default():
                tf.summary.text("operative_config", tf.io.read_file(path), step=0)
            self._wrote_config = True

    # ------------------------------------------------------------------ running

    def run(self) -> dict:
        try:
            with ProgressTicker(self._status) as self.ticker:
                return self._run()
        except StopRequested as stop:
            raise self._stopped(stop.signum) from None
        except tf.errors.DataLossError:  # the input pipeline met a damaged shard: which?
            where = self.task.damaged_shard()
            if where is None:
                raise  # the error boundary's own line (models/core/errors.py)
            raise UsageError(f"truncated TFRecord shard {where}; rewrite or delete it") from None
        finally:
            if not self.chief:
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    def _status(self) -> str | None:
        """The progress line for a silent stretch: the running evaluation's, else training's."""
        if self._evaluating is not None:
            return self._evaluating.progress()
        return self._pace() if self._pace is not None else None

    def _stopped(self, signum: int) -> BaseException:
        """What a stop flag seen between steps or batches becomes: a training run saves its
        step (Preempted); another mode has nothing to save (Stopped)."""
        if not self.training:
            return Stopped(signum, f"--mode={self.options.mode} stopped; nothing was written")
        step, latest = int(self.global_step.numpy()), self.manager.latest_checkpoint
        if step > 0 and not (latest or "").endswith(f"-{step}"):
            self.manager.save(checkpoint_number=step, check_interval=False)
        return ckpt.Preempted(step, signum)

    def _run(self) -> dict:
        mode, (latest, _) = self.options.mode, ckpt.resume_point(self.options.model_dir)
        if mode in ("eval", "export", "predict") and latest is None:
            raise UsageError(f"--mode={mode}: no checkpoint in {self.options.model_dir}")
        if mode == "continuous_eval" and is_multi_worker(self.strategy):
            raise UsageError("--mode=continuous_eval runs as one process beside the training job")
        if mode in TRAINING_MODES:
            return self._train(evaluate=mode == "train_and_eval")
        if mode == "eval":
            self._restore(latest)
            metrics = self._evaluate(self.plan.evaluations.values())
            for path in self._written(self.plan.evaluations.values()):
                print(f"wrote {path}", flush=True)
            return metrics
        if mode == "continuous_eval":
            return self._evaluate_continuously()
        self._restore(latest)
        for average in self.averages.values():  # export what evaluation measures
            average.swap(self.strategy)
        if mode == "predict":
            options = self.options
            if options.text:
                return predict_text(self.task, self.models, options.text, options.output)
            if options.audio:
                return predict_audio(self.task, self.models, options.audio, options.output)
            if options.num_images:
                return predict_samples(self.task, self.models, options.num_images, options.output)
            return predict_image(self.task, self.models, options.image, options.output)
        step = int(self.global_step.numpy())
        export_root = self.options.model_dir if self.chief else self.checkpoint_dir
        return {"export_dir": export_saved_model(self.task, self.models, export_root, step)}

    def _restore(self, path: str) -> None:
        with ckpt.checkpoint_must_fit(self.options.model_dir), self.strategy.scope():
            ckpt.restore_built(self.manager.checkpoint, path)

    def _evaluate(self, evaluations) -> dict:
        """Runs the given evaluations; their metrics, merged."""
        metrics = {}
        for evaluation in evaluations:
            self._evaluating = self.evaluators[evaluation.name]
            try:
                output = self.eval_controllers[evaluation.name].evaluate(evaluation.steps)
            finally:
                self._evaluating = None
            metrics.update({k: float(v) for k, v in output.items() if k != "steps_per_second"})
        return metrics

    def _written(self, evaluations) -> list[str]:
        """The files the given evaluations wrote in their last run."""
        return [path for e in evaluations for path in self.evaluators[e.name].written]

    def _evaluate_continuously(self) -> dict:
        """Evaluates each new checkpoint in model_dir until the last step or the timeout."""
        metrics, model_dir = {}, self.options.model_dir
        timeout = self.settings.continuous_eval_timeout_s
        for path in ckpt.new_checkpoints(model_dir, timeout, self.stop.check):
            self._restore(path)
            step = int(self.global_step.numpy())
            metrics = self._evaluate(self.plan.evaluations.values())
            self._progress(step, metrics)
            if step >= self.plan.total_steps:
                break
        if not metrics:
            raise UsageError(
                f"--mode=continuous_eval: no checkpoint appeared in {model_dir} within "
                f"{timeout:g} s (train.continuous_eval_timeout_s)"
            )
        return metrics

    def _train(self, evaluate: bool) -> dict:
        plan, step = self.plan, int(self.global_step.numpy())
        if step:
            print(f"resumed from checkpoint at step {step}{self._epoch_text(step)}", flush=True)
        self.recorder.run_start(self.sizes("train"), self._eval_samples(), step)
        try:
            with self._dispatcher_watch():
                metrics, reached, step = self._train_loop(evaluate, step)
        except BaseException:  # preemption, divergence, bad data: the record says aborted
            self.recorder.run_stop(success=False)
            raise
        self.controller.save_checkpoint()
        has_target = self.target is not None and evaluate
        self.recorder.run_stop(success=reached or not has_target, reached_target=reached)
        results = {"step": step, "epoch": plan.epoch(step), **metrics}
        if results["epoch"] is None:
            del results["epoch"]
        if reached:
            results["time_to_accuracy_s"] = self.recorder.record.time_to_accuracy_s
        elif has_target:
            results["target_not_reached"] = True
        return results

    def _eval_samples(self) -> int | None:
        evaluation = self.plan.evaluations.get(DEFAULT_EVALUATION)
        split = evaluation.split if evaluation else next(iter(self.plan.evaluations.values())).split
        return self.sizes(split)

    def _train_loop(self, evaluate: bool, step: int) -> tuple[dict, bool, int]:
        """Train to each evaluation's cadence until the last step or the target;
        (metrics, reached, step)."""
        plan, metrics, reached = self.plan, {}, False
        if step and evaluate and plan.due(step) and self._redo_evaluation(step):
            reached = self._round(step, plan.due(step), metrics)
        while step < plan.total_steps and not reached:
            stop = plan.next_stop(step)
            self.recorder.block_start(step, stop)
            self.controller.train(stop, checkpoint_at_completion=False)
            step = int(self.global_step.numpy())
            self.recorder.block_stop()
            due = plan.due(step) if evaluate else []
            reached = self._round(step, due, metrics)
        if evaluate and not metrics:  # resumed a finished run: report where it stands
            reached = self._round(step, list(plan.evaluations.values()), metrics)
        return metrics, reached, step

    def _redo_evaluation(self, step: int) -> bool:
        """Whether a run resumed at an evaluation's step evaluates first: when a stop cut that
        evaluation short (no record has it), or to know whether the target stands."""
        return self.target is not None or not self.recorder.evaluated_before(step)

    def _round(self, step: int, due: list[EvalPlan], metrics: dict) -> bool:
        """Runs the due evaluations into `metrics`, records and prints; whether the target
        is reached."""
        if due:
            self.recorder.eval_start(step)
        fresh = self._evaluate(due) if due else {}
        metrics.update(fresh)
        if fresh:
            self.recorder.eval_result(step, fresh, self._written(due))
        self._progress(step, fresh)
        return self._reached(step, fresh, metrics)

    def _reached(self, step: int, fresh: dict, metrics: dict) -> bool:
        """Whether this round reached the target, and every `also_reach` target stands."""
        if self.target is None or not fresh:
            return False
        targets = (self.target, *self.also_reach)
        for target in targets:
            if target.metric not in metrics and step >= self.plan.total_steps:
                raise UsageError(
                    f"{self._naming(target)} is not an eval metric (have: {', '.join(metrics)})"
                )
        return self.target.metric in fresh and all(
            t.metric in metrics and t.reached(metrics[t.metric]) for t in targets
        )

    def _dispatcher_watch(self):
        """With a tf.data service, a watch that ends a run whose dispatcher went silent."""
        address = self.options.tf_data_service
        if address is None:
            return contextlib.nullcontext()
        on_give_up = functools.partial(self.recorder.run_stop, success=False)
        return DispatcherWatch(address, self.options.tf_data_service_timeout_s, on_give_up)

    def _epoch_text(self, step: int) -> str:
        epoch = self.plan.epoch(step)
        return "" if epoch is None else f" (epoch {epoch:g})"

    def _progress(self, step: int, metrics: dict) -> None:
        """One line per evaluation round (or per stop when only training)."""
        parts = [f"step {step}/{self.plan.total_steps}"]
        epoch, epochs = self.plan.epoch(step), self.plan.epoch(self.plan.total_steps)
        if epoch is not None:
            parts.insert(0, f"epoch {epoch:g}/{epochs:g}")
        shown = {k: v for k, v in self._train_logs.items() if k != "examples_per_second"}
        if shown:
            parts.append("train " + ", ".join(f"{k} {v:.4g}" for k, v in shown.items()))
        if metrics:
            shown = (f"{k} {self.task.metric_text(k, v)}" for k, v in metrics.items())
            parts.append("eval " + ", ".join(shown))
        rate = self._train_logs.get("examples_per_second")
        if rate is not None:
            parts.append(f"{rate:.0f} examples/s")
        parts.append(f"{self.recorder.elapsed():.1f} s")
        print(" | ".join(parts), flush=True)
        self.ticker.touch()
