"""Speech recognition (Speech-Transformer; Tensor2Tensor's LibriSpeech problem): teacher-forced
training with label smoothing, optionally joined with CTC on the encoder; evaluation's
teacher-forced loss and token accuracy, and beam-search transcripts scored by word error rate
(jiwer) out of the graph, written beside the run for people to read. Served from WAV bytes:
features and decoding in the graph."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras

from models.core import registry
from models.core.errors import UsageError
from models.core.task import Models, Task
from models.data import audio_features
from models.data.audio_files import check_wav
from models.data.speech import PAD_ID, SpeechInput
from models.data.speech_schema import SAMPLE_RATE, UNIQUE_ID, normalise_text
from models.data.transcripts import word_error_rate
from models.tasks.sequence_outputs import (
    by_example,
    fixed_width,
    token_loss,
    token_metrics,
    update_token_metrics,
)


def ctc_loss(targets: tf.Tensor, target_mask: tf.Tensor, outputs: dict) -> tf.Tensor:
    """CTC loss [B] of the encoder's frames against each transcript without its end of
    sequence, a token (blank: id 0, the padding id, which no transcript holds)."""
    label_length = tf.reduce_sum(target_mask, axis=1) - 1
    labels = targets * tf.sequence_mask(label_length, tf.shape(targets)[1], targets.dtype)
    frames = tf.reduce_sum(tf.cast(outputs["ctc_mask"], tf.int32), axis=1)
    loss = tf.nn.ctc_loss(
        labels=labels,
        logits=outputs["ctc_logits"],
        label_length=label_length,
        logit_length=frames,
        logits_time_major=False,
        blank_index=0,
    )
    return loss / tf.cast(tf.maximum(label_length, 1), tf.float32)


@gin.configurable
class SpeechRecognitionTask(Task):
    """Speech to text on the LibriSpeech converter's records (built-in: spoken_wordnet, WordNet
    sentences spoken by espeak-ng). A training batch of B holds B x speech_input's longest clip
    in frames (length-bucketed clips), an epoch the split's frames; evaluation batches hold B
    clips. The loss: (1 - ctc_weight) x the decoder's label-smoothed cross-entropy a target
    token + ctc_weight x CTC a token. Metrics: `loss` (unsmoothed cross-entropy a token,
    teacher-forced) and `token_accuracy`; evaluations of any kind but "loss" also transcribe
    their split with beam search (`beam_size`, length normalisation `alpha`; 1 beam: greedy)
    and report `wer`, writing the transcripts to model_dir/evaluations/<name>/."""

    primary_metric = "wer"
    lower_is_better = frozenset({"loss", "wer"})
    metric_ranges = {"accuracy": (0.0, 1.0), "wer": (0.0, float("inf"))}

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        label_smoothing: float = 0.1,
        ctc_weight: float = 0.0,
        beam_size: int = 4,
        alpha: float = 0.6,
    ):
        self.model = model
        self.input = SpeechInput(data_dir=data_dir)
        self.seed = seed
        self.label_smoothing = label_smoothing
        if not 0.0 <= ctc_weight <= 1.0:
            raise UsageError(f"SpeechRecognitionTask.ctc_weight={ctc_weight!r}: from 0 to 1")
        self.ctc_weight = ctc_weight
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise UsageError(
                f"SpeechRecognitionTask.beam_size={beam_size!r}: at least 1 (1: greedy)"
            )
        self.beam_size = beam_size
        self.alpha = alpha
        self._transcriber = None

    def build_models(self) -> Models:
        model = registry.create_model(
            self.model,
            vocab_size=self.input.vocab_size,
            decode_max_length=self.input.max_target_length,
            ctc_head=self.ctc_weight > 0,
        )
        return {"model": model}

    def synthetic_inputs(self, global_batch_size, input_context):
        """One batch of random frames and transcripts of the longest lengths, repeated (no
        data read: speech_input.max_seconds and max_target_length set the shapes)."""
        rows = input_context.get_per_replica_batch_size(global_batch_size)
        frames, length = self.input.max_frames, self.input.max_target_length
        seed = [self.seed or 0, 0]
        features = tf.random.stateless_normal([rows, frames, audio_features.NUM_BINS], seed)
        targets = tf.random.stateless_uniform(
            [rows, length], seed, 3, self.input.vocab_size, tf.int32
        )
        targets = tf.concat([targets[:, :-1], tf.fill([rows, 1], self.input.eos_id)], axis=1)
        batch = {
            "features": features,
            "feature_mask": tf.ones([rows, frames], tf.int32),
            "targets": targets,
            "target_mask": tf.ones_like(targets),
        }
        return tf.data.Dataset.from_tensors(batch).repeat()

    def num_examples(self, split: str) -> int:
        """Training: the split's frames in clips of the longest length (what a batch counts);
        evaluation: its clips."""
        if split == "train":
            return -(-self.input.num_frames(split) // self.input.max_frames)
        return self.input.num_examples(split)

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return token_metrics(training)

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        model = models["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = model(_model_inputs(inputs), training=True)
            logits = outputs["logits"]
            loss = token_loss(inputs, logits, self.label_smoothing)
            if self.ctc_weight:
                ctc = tf.reduce_mean(ctc_loss(inputs["targets"], inputs["target_mask"], outputs))
                loss = (1.0 - self.ctc_weight) * loss + self.ctc_weight * ctc
            scaled = loss / replicas  # each replica's mean, averaged
        grads = tape.gradient(scaled, model.trainable_variables)
        optimizers["model"].apply_gradients(zip(grads, model.trainable_variables, strict=True))
        update_token_metrics(metrics, inputs, logits)
        return {"loss": loss}

    def validation_step(self, inputs, models, metrics, evaluation):
        model = models["model"]
        logits = model(_model_inputs(inputs), training=False)["logits"]
        update_token_metrics(metrics, inputs, logits)
        if evaluation.kind == "loss":
            return {}
        found = model.transcribe(
            inputs["features"], inputs["feature_mask"], self.beam_size, self.alpha
        )
        transcripts = fixed_width(found["outputs"], self.input.max_target_length)
        return {UNIQUE_ID: inputs[UNIQUE_ID], "transcript": transcripts}

    def aggregate_logs(self, state, step_outputs, evaluation):
        """{unique_id: decoded ids} of every real clip (padding clips dropped)."""
        return by_example(state, step_outputs[UNIQUE_ID], step_outputs["transcript"], PAD_ID)

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        """Word error rate of the split's transcripts against its references (jiwer, on
        normalised text); writes both for inspection."""
        if state is None:  # a "loss" evaluation
            return {}
        utterances, references = self.input.evaluation_set(evaluation.split)
        if len(state) != len(references):
            raise RuntimeError(f"evaluation transcribed {len(state)} of {len(references)} clips")
        hypotheses = self.input.detokenize([state[uid] for uid in range(len(references))])
        self._write(evaluation.split, utterances, references, hypotheses)
        return {"wer": word_error_rate(references, hypotheses)}

    def _write(self, split: str, utterances, references, hypotheses) -> None:
        """evaluations/<name>/<split>-<step>.txt beside <split>-reference.txt (eval_run's
        write_scored), Kaldi's text format (`<utterance id> <words>`), normalised as scored:
        jiwer on their words gives the run's WER."""
        if self.eval_run is not None:
            written = _kaldi_text(utterances, hypotheses)
            reference = _kaldi_text(utterances, map(normalise_text, references))
            self.eval_run.write_scored(split, ".txt", written, reference)

    # ------------------------------------------------------------ serving

    def transcriber(self, models: Models):
        """A tf.function: [n] WAV files' bytes (16 kHz, 16-bit) -> {"transcript": [n]
        strings, "score": [n]}: decoded, featurised, searched (beam_size, alpha) and
        detokenised in the graph."""
        model, tokens = models["model"], self.input.tokenizer()
        # Tracked by the model, so that a SavedModel of the function holds the vocabulary's
        # resources (only export and predict build this function; checkpoints never see it).
        model.transcript_tokens = tokens

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="wav")])
        def transcribe(wav):
            spec = tf.RaggedTensorSpec([None, audio_features.NUM_BINS], tf.float32, 0)
            features = tf.map_fn(_wav_features, wav, fn_output_signature=spec)
            mask = tf.sequence_mask(features.row_lengths(), dtype=tf.int32)
            found = model.transcribe(features.to_tensor(), mask, self.beam_size, self.alpha)
            return {"transcript": tokens.detokenize(found["outputs"]), "score": found["scores"]}

        return transcribe

    def transcribe_audio(self, models: Models, wav: bytes, name: str) -> str:
        """The transcript of one WAV file (--mode=predict --audio=FILE); UsageError for audio
        the recipe cannot read: not 16-bit mono WAV at 16 kHz, empty or over its longest."""
        check_wav(wav, name, self.input.max_seconds)
        transcribe = self._transcriber = self._transcriber or self.transcriber(models)
        return transcribe(tf.constant([wav]))["transcript"][0].numpy().decode("utf-8")

    def serving_signatures(self, models: Models):
        """WAV bytes -> their transcripts and beam scores."""
        return {"serving_default": self.transcriber(models)}


def _wav_features(wav: tf.Tensor) -> tf.Tensor:
    """One WAV file's normalised log-mel frames [frames, bins] (a row of map_fn's ragged
    result)."""
    samples, rate = tf.audio.decode_wav(wav, desired_channels=1)
    tf.debugging.assert_equal(rate, SAMPLE_RATE, message="the WAV file is not at 16 kHz")
    return audio_features.from_samples(samples[:, 0])


def _kaldi_text(utterances, texts) -> str:
    return "".join(f"{u} {t}\n" for u, t in zip(utterances, texts, strict=True))


def _model_inputs(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The model's features: frames, their mask and the target ids."""
    return {name: inputs[name] for name in ("features", "feature_mask", "targets")}
