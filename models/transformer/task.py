"""Translation (Vaswani et al. 2017; Model Garden's translation task): teacher-forced training
with label smoothing on token batches; evaluation's teacher-forced loss and token accuracy, and
beam-search translations scored by detokenised, case-sensitive sacreBLEU against the raw
references, out of the graph, the translations written beside the run for people to read."""

from __future__ import annotations

import sys

import gin
import tensorflow as tf
import tf_keras

from models.core import registry
from models.core.errors import UsageError
from models.core.task import Models, Task
from models.data.convert.parallel_text import UNIQUE_ID
from models.data.translation import PAD_ID, TranslationInput
from models.tasks.sequence_outputs import (
    by_example,
    fixed_width,
    token_loss,
    token_metrics,
    update_token_metrics,
)

PREDICT_BATCH = 64  # sentences translated at once by --mode=predict


@gin.configurable
class TranslationTask(Task):
    """Sentence-pair translation on the parallel-text converter's records (built-in:
    pg_messages, PostgreSQL's English-German messages). A training batch of B holds B x
    translation_input.max_length tokens (length-bucketed pairs; B pairs on a TPU's one shape),
    an epoch the split's tokens; evaluation batches hold B sentence pairs. Metrics: `loss`
    (unsmoothed cross-entropy a target token, teacher-forced) and `token_accuracy`; evaluations
    of any kind but "loss" also translate their split with beam search (`beam_size`, length
    penalty `alpha`; 1 beam: greedy) and report `bleu` (sacreBLEU, 0-100), writing the
    translations to model_dir/evaluations/<name>/.
    `vocab_size` None: the data's (set it for synthetic input without data)."""

    primary_metric = "bleu"
    metric_ranges = {"accuracy": (0.0, 1.0), "bleu": (0.0, 100.0)}

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        label_smoothing: float = 0.1,
        beam_size: int = 4,
        alpha: float = 0.6,
        vocab_size: int | None = None,
    ):
        self.model = model
        self.input = TranslationInput(data_dir=data_dir)
        self.seed = seed
        self.label_smoothing = label_smoothing
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise UsageError(f"TranslationTask.beam_size={beam_size!r}: at least 1 (1: greedy)")
        self.beam_size = beam_size
        self.alpha = alpha
        self._vocab_size = vocab_size
        self._translate = None

    @property
    def vocab_size(self) -> int:
        return self._vocab_size or self.input.vocab_size()

    def build_models(self) -> Models:
        return {"model": registry.create_model(self.model, vocab_size=self.vocab_size)}

    def synthetic_inputs(self, global_batch_size, input_context):
        """One batch of random pairs of max_length tokens, repeated (no data read)."""
        rows = input_context.get_per_replica_batch_size(global_batch_size)
        ids = tf.random.stateless_uniform(
            [2, rows, self.input.max_length], [self.seed or 0, 0], 2, self.vocab_size, tf.int32
        )
        ones = tf.ones_like(ids[0])
        batch = {"inputs": ids[0], "targets": ids[1], "input_mask": ones, "target_mask": ones}
        return tf.data.Dataset.from_tensors(batch).repeat()

    def num_examples(self, split: str) -> int:
        """Training: the split's tokens in pairs of max_length (what a batch counts);
        evaluation: its pairs."""
        if split == "train":
            return -(-self.input.num_tokens(split) // self.input.max_length)
        return self.input.num_examples(split)

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return token_metrics(training)

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        model = models["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            logits = model(_pair(inputs), training=True)
            loss = token_loss(inputs, logits, self.label_smoothing)
            scaled = loss / replicas  # Model Garden's: each replica's token mean, averaged
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizers["model"].apply_gradients(zip(grads, model.trainable_variables, strict=True))
        update_token_metrics(metrics, inputs, logits)
        return {"loss": loss}

    def validation_step(self, inputs, models, metrics, evaluation):
        model = models["model"]
        logits = model(_pair(inputs), training=False)
        update_token_metrics(metrics, inputs, logits)
        if evaluation.kind == "loss":
            return {}
        ids = model.translate(inputs["inputs"], self.beam_size, self.alpha)["outputs"]
        width = self.input.max_length + model.get_config()["extra_decode_length"]
        return {UNIQUE_ID: inputs[UNIQUE_ID], "translation": fixed_width(ids, width)}

    def aggregate_logs(self, state, step_outputs, evaluation):
        """{unique_id: decoded ids} of every real pair (padding pairs dropped)."""
        return by_example(state, step_outputs[UNIQUE_ID], step_outputs["translation"], PAD_ID)

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        """sacreBLEU of the split's translations against its references (detokenised,
        case-sensitive, sacreBLEU's defaults); writes both for inspection."""
        if state is None:  # a "loss" evaluation
            return {}
        import sacrebleu

        _, references = self.input.evaluation_set(evaluation.split)
        missing = len(references) - len(state)
        if missing:
            raise RuntimeError(f"evaluation translated {len(state)} of {len(references)} pairs")
        translations = self.input.detokenize([state[uid] for uid in range(len(references))])
        self._write(evaluation.split, translations, references)
        return {"bleu": sacrebleu.corpus_bleu(translations, [references]).score}

    def _write(self, split: str, translations: list[str], references: list[str]) -> None:
        """evaluations/<name>/<split>-<step>.<target> beside <split>-reference.<target>
        (eval_run's write_scored): `sacrebleu REFERENCE -i TRANSLATIONS` scores them as the run
        did."""
        if self.eval_run is not None:
            lines = lambda texts: "".join(f"{line}\n" for line in texts)  # noqa: E731
            suffix = f".{self.input.languages[1]}"
            self.eval_run.write_scored(split, suffix, lines(translations), lines(references))

    def translator(self, models: Models):
        """A tf.function: [n] source strings -> {"translation": [n] strings, "score": [n]},
        tokenised, searched (beam_size, alpha) and detokenised in the graph."""
        import tensorflow_text  # noqa: F401 - registers the tokenizer's ops

        model, tokenizer = models["model"], self.input.tokenizer()
        # Tracked by the model, so that a SavedModel of the function holds the tokenizer's
        # resource (only export and predict build this function; checkpoints never see it).
        model.sentencepiece_tokenizer = tokenizer
        eos, length = self.input.eos_id, self.input.max_length

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="source")])
        def translate(source):
            ids = tokenizer.tokenize(source)[:, : length - 1]
            ends = tf.RaggedTensor.from_tensor(tf.fill([ids.nrows(), 1], eos))
            ids = tf.concat([ids, ends], axis=1).to_tensor(default_value=0)
            found = model.translate(ids, self.beam_size, self.alpha)
            outputs = found["outputs"]
            before_end = tf.cumsum(tf.cast(outputs == eos, tf.int32), axis=1) == 0
            kept = tf.ragged.boolean_mask(outputs, before_end & (outputs != 0))
            return {"translation": tokenizer.detokenize(kept), "score": found["scores"]}

        return translate

    def predict_lines(self, models: Models, lines: list[str]) -> list[str]:
        """The translation of each line (--mode=predict --input=FILE); a line longer than the
        model reads is translated from its first tokens, with a note on stderr."""
        self._note_cut_lines(lines)
        translate = self._translate = self._translate or self.translator(models)
        found = []
        for first in range(0, len(lines), PREDICT_BATCH):
            batch = tf.constant(lines[first : first + PREDICT_BATCH], tf.string)
            found.extend(text.decode("utf-8") for text in translate(batch)["translation"].numpy())
        return found

    def _note_cut_lines(self, lines: list[str], shown: int = 5) -> None:
        """Notes (stderr) the lines whose tokens the translator cuts to max_length - 1."""
        import tensorflow_text  # noqa: F401 - registers the tokenizer's ops

        if not lines:
            return
        kept = self.input.max_length - 1
        lengths = self.input.tokenizer().tokenize(tf.constant(lines)).row_lengths().numpy()
        cut = [(i + 1, int(n)) for i, n in enumerate(lengths) if n > kept]
        for number, tokens in cut[:shown]:
            print(
                f"note: line {number} has {tokens:,} tokens; the model translates its first {kept}",
                file=sys.stderr,
            )
        if len(cut) > shown:
            print(f"note: and {len(cut) - shown} more lines over {kept} tokens", file=sys.stderr)

    def serving_signatures(self, models: Models):
        """Raw source sentences -> their translations and beam scores."""
        return {"serving_default": self.translator(models)}


def _pair(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The model's features: source and target ids (it masks id 0 itself)."""
    return {"inputs": inputs["inputs"], "targets": inputs["targets"]}
