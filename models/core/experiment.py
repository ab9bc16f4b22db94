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
from models.core import gin_config, optimization
from models.core.cluster import is_chief, is_multi_worker
from models.core.ema import build_averages
from models.core.errors import UsageError, nearest
from models.core.export import export_saved_model
from models.core.profiler import Profiler
from models.core.records import RunInfo, RunRecorder, describe_accelerator
from models.core.service_watch import DispatcherWatch
from models.core.settings import StepPlan, TrainSettings
from models.core.strategy import check_jit_compile
from models.core.task import Task
from models.core.trainer import Evaluator, Trainer


@dataclass
class RunOptions:
    """What the shared flags say, after parsing."""

    model_dir: str
    mode: str
    model_name: str
    recipe: str
    slice_name: str
    precision: str
    seed: int
    profile_steps: str | None = None
    tf_data_service: str | None = None
    tf_data_service_timeout_s: float = 300.0


class Experiment:
    """Holds everything one run builds; `run()` dispatches on the mode."""

    def __init__(self, task: Task, strategy, settings: TrainSettings, options: RunOptions):
        self.task, self.strategy, self.settings, self.options = task, strategy, settings, options
        settings.check(strategy.num_replicas_in_sync)
        check_jit_compile(settings.jit_compile, strategy)
        self.chief = is_chief(strategy)
        self.training = options.mode in ("train", "train_and_eval")
        if self.training:
            task.validate_data()
        self.plan = StepPlan.make(
            settings, task.num_examples("train"), task.num_examples("validation")
        )
        self.models, self.optimizers, self.global_step, self.averages = self._build_models()
        # Non-chief workers must write their (collective) saves somewhere else: a temp dir.
        self.checkpoint_dir = options.model_dir if self.chief else tempfile.mkdtemp("-zoo-worker")
        self.manager = ckpt.build_manager(
            self.checkpoint_dir,
            self.global_step,
            self.plan.checkpoint_interval,
            settings.max_checkpoints_to_keep if self.chief else 1,
            **self.models,
            **{f"optimizer_{k}": v for k, v in self.optimizers.items()},
            **{f"average_{k}": v.averages for k, v in self.averages.items()},
        )
        self.trainer, self.evaluator = self._build_runners()
        self.recorder = self._build_recorder()
        self.preemption = self._build_preemption()
        self.profiler = Profiler(options.profile_steps, f"{options.model_dir}/profile")
        with ckpt.checkpoint_must_fit(options.model_dir):
            self.controller = self._build_controller() if self.trainer or self.evaluator else None
        self._wrote_config = False
        self._check_target_metric()

    def _build_preemption(self):
        """SIGTERM handling: TensorFlow's PreemptionCheckpointHandler across workers (every
        worker first restores the chief's latest checkpoint), our own watcher elsewhere."""
        if not is_multi_worker(self.strategy):
            return ckpt.PreemptionWatcher(self.manager, self.global_step)
        latest = tf.train.latest_checkpoint(self.options.model_dir)
        if latest:
            with ckpt.checkpoint_must_fit(self.options.model_dir):
                self.manager.checkpoint.restore(latest)
        with self.strategy.scope():
            return ckpt.ClusterPreemption(self.strategy, self.manager, self.global_step)

    def _check_target_metric(self) -> None:
        """A target on a metric the evaluation does not compute fails before any training."""
        name = self.settings.target_metric
        known = [m.name for m in self.evaluator.metrics] if self.evaluator else []
        if name and known and name not in known + [self.task.primary_metric]:
            raise UsageError(
                f"--target_metric={name} is not an eval metric{nearest(name, known)} "
                f"(have: {', '.join(known)})"
            )

    def _build_models(self):
        """Models, optimisers, the global step and weight averages, under the strategy scope."""
        schedule_args = {
            "steps_per_epoch": self.plan.steps_per_epoch,
            "total_steps": self.plan.total_steps,
            "global_batch_size": self.settings.global_batch_size,
        }
        with self.strategy.scope():
            models = self.task.build_models()
            optimizers = self.task.build_optimizers(models, schedule_args)
            global_step = orbit.utils.create_global_step()
            if not self.training:
                for name, optimizer in optimizers.items():  # slots, so that restores match
                    optimizer.build(models[name].trainable_variables)
            averages = build_averages(models, list(optimizers), optimization.ema_decay())
        return models, optimizers, global_step, averages

    def _build_runners(self) -> tuple[Trainer | None, Evaluator | None]:
        task, strategy, settings, mode = self.task, self.strategy, self.settings, self.options.mode
        eval_batch = settings.eval_batch_size or settings.global_batch_size
        trainer = evaluator = None
        if self.training:
            trainer = Trainer(
                task,
                strategy,
                self.models,
                self.optimizers,
                self.global_step,
                settings.global_batch_size,
                jit_compile=settings.jit_compile,
                averages=self.averages,
                data_service=self.options.tf_data_service,
            )
        if mode in ("eval", "train_and_eval", "continuous_eval"):
            evaluator = Evaluator(
                task,
                strategy,
                self.models,
                eval_batch,
                jit_compile=settings.jit_compile,
                averages=self.averages,
            )
        return trainer, evaluator

    def _build_recorder(self) -> RunRecorder:
        options, settings = self.options, self.settings
        info = RunInfo(
            model=options.model_name,
            recipe=options.recipe,
            slice=options.slice_name,
            replicas=self.strategy.num_replicas_in_sync,
            global_batch_size=settings.global_batch_size,
            precision=options.precision,
            seed=options.seed,
            target_metric=settings.target_metric,
            target_value=settings.target_value,
        )
        return RunRecorder(options.model_dir, info, chief=self.chief and self.training)

    def _build_controller(self) -> orbit.Controller:
        """orbit's outer loop; restores the latest checkpoint in model_dir if there is one."""
        model_dir = self.options.model_dir
        return orbit.Controller(
            global_step=self.global_step,
            trainer=self.trainer,
            evaluator=self.evaluator,
            strategy=self.strategy,
            train_actions=[ckpt.NanGuard(self.global_step), self._after_loop, self.preemption],
            steps_per_loop=self.plan.steps_per_loop,
            checkpoint_manager=self.manager,
            summary_interval=self.plan.steps_per_loop if self.trainer else None,
            summary_dir=f"{model_dir}/summaries/train" if self.chief else None,
            eval_summary_dir=f"{model_dir}/summaries/eval" if self.chief else None,
        )

    def _after_loop(self, output: dict) -> None:
        """Per-loop bookkeeping: operative config after the first loop, throughput, profiler."""
        self.recorder.train_progress(float(output.get("examples_per_second", 0.0)))
        self.profiler.at_step(int(self.global_step.numpy()))
        if self.chief and not self._wrote_config:
            path = gin_config.write_operative_config(self.options.model_dir)
            with self.controller.summary_manager.summary_writer().as_default():
                tf.summary.text("operative_config", tf.io.read_file(path), step=0)
            self._wrote_config = True

    def run(self) -> dict:
        try:
            return self._run()
        finally:
            if not self.chief:
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    def _run(self) -> dict:
        mode, latest = self.options.mode, tf.train.latest_checkpoint(self.options.model_dir)
        if mode in ("eval", "export") and latest is None:
            raise UsageError(f"--mode={mode}: no checkpoint in {self.options.model_dir}")
        if mode == "continuous_eval" and is_multi_worker(self.strategy):
            raise UsageError("--mode=continuous_eval runs as one process beside the training job")
        if mode == "train":
            return self._train(evaluate=False)
        if mode == "train_and_eval":
            return self._train(evaluate=True)
        if mode == "eval":
            return self._evaluate()
        if mode == "continuous_eval":
            self.controller.evaluate_continuously(
                self.plan.eval_steps, timeout=self.settings.continuous_eval_timeout_s
            )
            return {}
        with ckpt.checkpoint_must_fit(self.options.model_dir):
            self.manager.checkpoint.restore(latest).expect_partial()
        for average in self.averages.values():  # export what evaluation measures
            average.swap(self.strategy)
        step = int(self.global_step.numpy())
        export_root = self.options.model_dir if self.chief else self.checkpoint_dir
        return {"export_dir": export_saved_model(self.task, self.models, export_root, step)}

    def _evaluate(self) -> dict:
        metrics = self.controller.evaluate(self.plan.eval_steps)
        return {k: float(v) for k, v in metrics.items() if k != "steps_per_second"}

    def _reached(self, metrics: dict) -> bool:
        name, value = self.settings.target_metric, self.settings.target_value
        if name is None or value is None:
            return False
        if name not in metrics:
            raise UsageError(
                f"--target_metric={name} is not an eval metric (have: {', '.join(metrics)})"
            )
        return metrics[name] >= value

    def _train(self, evaluate: bool) -> dict:
        plan, step = self.plan, int(self.global_step.numpy())
        if step:
            print(f"resumed from checkpoint at step {step} (epoch {plan.epoch(step)})", flush=True)
        self.recorder.run_start(
            describe_accelerator(self.strategy),
            self.task.num_examples("train"),
            self.task.num_examples("validation"),
        )
        try:
            with self._dispatcher_watch():
                metrics, reached, step = self._train_loop(evaluate, step)
        except BaseException:  # preemption, divergence, bad data: the record says aborted
            self.recorder.run_stop(success=False)
            raise
        self.controller.save_checkpoint()
        has_target = self.settings.target_metric is not None and evaluate
        self.recorder.run_stop(success=reached or not has_target)
        results = {"step": step, "epoch": plan.epoch(step), **metrics}
        if reached:
            results["time_to_accuracy_s"] = self.recorder.record.time_to_accuracy_s
        elif has_target:
            results["target_not_reached"] = True
        return results

    def _train_loop(self, evaluate: bool, step: int) -> tuple[dict, bool, int]:
        """Train in eval intervals until the last step or the target; (metrics, reached, step)."""
        plan, metrics, reached = self.plan, {}, False
        while step < plan.total_steps and not reached:
            target = min((step // plan.eval_interval + 1) * plan.eval_interval, plan.total_steps)
            self.controller.train(target, checkpoint_at_completion=False)
            step = int(self.global_step.numpy())
            if evaluate:
                metrics, reached = self._eval_and_record(step)
        if evaluate and not metrics:  # resumed a finished run: report where it stands
            metrics, reached = self._eval_and_record(step)
        return metrics, reached, step

    def _dispatcher_watch(self):
        """With a tf.data service, a watch that ends a run whose dispatcher went silent."""
        address = self.options.tf_data_service
        if address is None:
            return contextlib.nullcontext()
        on_give_up = functools.partial(self.recorder.run_stop, success=False)
        return DispatcherWatch(address, self.options.tf_data_service_timeout_s, on_give_up)

    def _eval_and_record(self, step: int) -> tuple[dict, bool]:
        metrics = self._evaluate()
        reached = self._reached(metrics)
        self.recorder.eval_result(self.plan.epoch(step), metrics)
        self._progress(step, metrics)
        return metrics, reached

    def _progress(self, step: int, metrics: dict) -> None:
        shown = " | ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        rate = self.recorder.record.examples_per_second or 0.0
        print(
            f"epoch {self.plan.epoch(step):g}/{self.settings.epochs:g} | step {step} | {shown} | "
            f"{rate:.0f} examples/s | {self.recorder.elapsed():.1f} s",
            flush=True,
        )
