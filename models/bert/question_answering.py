"""SQuAD v1.1 span extraction (Google's run_squad.py): the pretrained encoder and a start/end
head, cross-entropy on both ends; evaluation turns each question's best span over its windows
into text (Model Garden's copy of run_squad's post-processing) and scores it with the official
v1.1 exact match and F1."""

from __future__ import annotations

import collections
from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from models.bert.model import BertSpanLabeler
from models.bert.steps import ACCURACY, apply_gradients, cross_entropy, fine_tuning_model
from models.core.task import Models, Task
from models.data.question_answering import PAD_ID, QuestionAnsweringInput
from models.data.text import CLS, SEP, bert_tokenizer

SpanLogits = collections.namedtuple("SpanLogits", ["unique_id", "start_logits", "end_logits"])
ENDS = ("start", "end")


@gin.configurable
class QuestionAnsweringTask(Task):
    """Fine-tuning on SQuAD v1.1 records (built-in: wordnet_qa); metrics `exact_match` and `f1`
    (fractions, the official script's numbers / 100). Start the encoder from a pretraining run
    as SentenceClassificationTask does. `n_best_size` and `max_answer_length` are run_squad's
    post-processing settings."""

    primary_metric = "f1"
    metric_ranges = {"accuracy": (0.0, 1.0), "f1": (0.0, 1.0), "exact_match": (0.0, 1.0)}

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        n_best_size: int = 20,
        max_answer_length: int = 30,
    ):
        self.model = model
        self.input = QuestionAnsweringInput(data_dir=data_dir)
        self.seed = seed
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length

    def build_models(self) -> Models:
        vocab_size, length = len(self.input.vocab()), self.input.seq_length
        model = fine_tuning_model(self.model, vocab_size, BertSpanLabeler, length, "squad_input")
        return {"model": model}

    def validate_data(self, splits: Sequence[str]) -> None:
        self.input.vocab()
        self.input.validate(splits)

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return [ACCURACY(f"{end}_accuracy") for end in ENDS] if training else []

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        features, positions = inputs
        model = models["model"]
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            per_end = [
                cross_entropy(positions[f"{end}_positions"], logits[f"{end}_logits"])
                for end in ENDS
            ]
            per_example = (per_end[0] + per_end[1]) / 2
            loss = tf.reduce_sum(per_example) / global_batch_size
        apply_gradients(model, optimizers["model"], tape, loss)
        for metric, end in zip(metrics, ENDS, strict=True):
            metric.update_state(
                positions[f"{end}_positions"], tf.cast(logits[f"{end}_logits"], tf.float32)
            )
        return {"loss": tf.reduce_mean(per_example)}

    def validation_step(self, inputs, models, metrics, evaluation):
        logits = models["model"](inputs, training=False)
        outputs = {name: tf.cast(value, tf.float32) for name, value in logits.items()}
        return {"unique_ids": inputs["unique_ids"], **outputs}

    def aggregate_logs(self, state, step_outputs, evaluation):
        """Keeps every real window's logits (padding windows dropped)."""
        state = state if state is not None else []
        real = step_outputs["unique_ids"] != PAD_ID
        state.extend(
            SpanLogits(int(uid), start, end)
            for uid, start, end in zip(
                step_outputs["unique_ids"][real],
                np.asarray(step_outputs["start_logits"])[real],
                np.asarray(step_outputs["end_logits"])[real],
                strict=True,
            )
        )
        return state

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        """Official SQuAD v1.1 exact match and F1 of the best span of each question."""
        from official.nlp.tools import squad_evaluate_v1_1

        scores = squad_evaluate_v1_1.evaluate(
            self.input.evaluation_set()[0]["data"], self.predictions(state or [])
        )
        return {"exact_match": scores["exact_match"], "f1": scores["final_f1"]}

    def serving_signatures(self, models: Models):
        """Raw (question, context) strings -> the best answer span of the context's first
        window: its text, byte offsets [start, end) in the context and score (start + end
        logit), tokenised and searched in the graph; no span (empty context): "" and -1."""
        import tensorflow_text

        model, vocab, windows = models["model"], self.input.vocab(), self.input.windows()
        tokenizer = bert_tokenizer(vocab, windows.do_lower_case)
        length, cls_id, sep_id = self.input.seq_length, vocab.index(CLS), vocab.index(SEP)
        specs = [tf.TensorSpec([None], tf.string, name=name) for name in ("question", "context")]

        @tf.function(input_signature=specs)
        def serve(question, context):
            query = tokenizer.tokenize(question)[:, : windows.max_query_length]
            ids, starts, ends = tokenizer.tokenize_with_offsets(context)
            room = length - 3 - query.row_lengths()
            ids, starts, ends = (_first(tokens, room) for tokens in (ids, starts, ends))
            word_ids, types = tensorflow_text.combine_segments([query, ids], cls_id, sep_id)
            word_ids, mask = tensorflow_text.pad_model_inputs(word_ids, length)
            types, _ = tensorflow_text.pad_model_inputs(types, length)
            features = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": types}
            logits = model({k: tf.cast(v, tf.int32) for k, v in features.items()}, training=False)
            first = query.row_lengths() + 2  # the context's first token: after [CLS] q [SEP]
            best, score = best_spans(
                tf.cast(logits["start_logits"], tf.float32),
                tf.cast(logits["end_logits"], tf.float32),
                first,
                first + ids.row_lengths(),
                self.max_answer_length,
            )
            found = score > -np.inf
            index = tf.where(found[:, None], best - first[:, None], 0)
            start = tf.gather(starts.to_tensor(), index[:, :1], batch_dims=1)[:, 0]
            end = tf.gather(ends.to_tensor(), index[:, 1:], batch_dims=1)[:, 0]
            start, end = tf.where(found, start, -1), tf.where(found, end, -1)
            answer = tf.strings.substr(context, tf.maximum(start, 0), end - start)
            return {
                "answer": tf.where(found, answer, ""),
                "start": start,
                "end": end,
                "score": score,
            }

        return {"serving_default": serve}

    def predictions(self, state: list[SpanLogits]) -> dict[str, str]:
        """{question id: answer text} from the windows' logits, as run_squad.py writes
        predictions.json."""
        from official.nlp.data import squad_lib

        _, examples, windows = self.input.evaluation_set()
        answers, _, _ = squad_lib.postprocess_output(
            examples,
            windows,
            state,
            self.n_best_size,
            self.max_answer_length,
            self.input.windows().do_lower_case,
        )
        return dict(answers)


def _first(tokens: tf.RaggedTensor, counts: tf.Tensor) -> tf.RaggedTensor:
    """Each row's first counts[row] items."""
    return tf.ragged.boolean_mask(tokens, tf.ragged.range(tokens.row_lengths()) < counts[:, None])


def best_spans(
    start_logits: tf.Tensor,
    end_logits: tf.Tensor,
    first: tf.Tensor,
    stop: tf.Tensor,
    max_answer_length: int,
) -> tuple[tf.Tensor, tf.Tensor]:
    """([batch, 2] token positions (start, end) maximising start + end logit among spans in
    [first, stop) of at most max_answer_length tokens; [batch] their scores, -inf where no
    span fits), as run_squad's post-processing picks an answer."""
    positions = tf.range(tf.shape(start_logits)[1], dtype=first.dtype)
    inside = (positions >= first[:, None]) & (positions < stop[:, None])  # [batch, length]
    span = positions[None, :] - positions[:, None]  # end - start, [length, length]
    allowed = (span >= 0) & (span < max_answer_length)
    valid = inside[:, :, None] & inside[:, None, :] & allowed[None]
    scores = start_logits[:, :, None] + end_logits[:, None, :]
    scores = tf.where(valid, scores, -np.inf)
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(flat, axis=1, output_type=first.dtype)
    width = tf.shape(start_logits, out_type=first.dtype)[1]
    return tf.stack([best // width, best % width], axis=1), tf.reduce_max(flat, axis=1)
