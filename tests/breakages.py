"""Deliberate bugs, one per task kind, that a memorisation check must catch: tests/memorisation.py
runs a family's CLI after `apply(name)` has patched its task (the patch lives only in that
process). Each is a bug of a kind that real code has had: labels no longer aligned with their
inputs, a metric fed classes or pixels off by one, a loss with the wrong sign."""

from __future__ import annotations

import tensorflow as tf


def _shuffled(tensor: tf.Tensor) -> tf.Tensor:
    """tensor's rows in a fresh random order at every step (inside the traced step)."""
    return tf.gather(tensor, tf.random.shuffle(tf.range(tf.shape(tensor)[0])))


def _patch(cls: type, method: str, wrap) -> None:
    original = getattr(cls, method)
    setattr(cls, method, lambda self, *args: wrap(original, self, *args))


def _classification_labels_shuffled() -> None:
    from models.tasks.image_classification import ImageClassificationTask

    def step(original, self, inputs, *rest):
        images, labels = inputs
        return original(self, (images, _shuffled(labels)), *rest)

    _patch(ImageClassificationTask, "train_step", step)


def _detection_classes_off_by_one() -> None:
    from models.tasks.coco_detection import CocoDetectionTask

    def step(original, self, *args):
        outputs = original(self, *args)
        predictions = dict(outputs["predictions"])
        predictions["detection_classes"] = predictions["detection_classes"] + 1
        return {**outputs, "predictions": predictions}

    _patch(CocoDetectionTask, "validation_step", step)


def _instance_masks_shifted() -> None:
    from models.tasks.coco_detection import CocoDetectionTask

    def step(original, self, *args):
        outputs = original(self, *args)
        predictions = dict(outputs["predictions"])
        masks = predictions["detection_masks"]
        predictions["detection_masks"] = tf.roll(masks, tf.shape(masks)[-1] // 2, axis=-1)
        return {**outputs, "predictions": predictions}

    _patch(CocoDetectionTask, "validation_step", step)


def _segmentation_classes_off_by_one() -> None:
    from models.tasks.semantic_segmentation import SemanticSegmentationTask

    def confusion(original, self, logits, masks):
        return original(self, tf.roll(logits, 1, axis=-1), masks)

    _patch(SemanticSegmentationTask, "confusion", confusion)


def _masked_tokens_shuffled() -> None:
    from models.bert.task import MaskedLMTask

    def step(original, self, inputs, *rest):
        return original(
            self, {**inputs, "masked_lm_ids": _shuffled(inputs["masked_lm_ids"])}, *rest
        )

    _patch(MaskedLMTask, "train_step", step)


def _sentence_labels_shuffled() -> None:
    from models.bert.task import SentenceClassificationTask

    def step(original, self, inputs, *rest):
        features, labels = inputs
        return original(self, (features, _shuffled(labels)), *rest)

    _patch(SentenceClassificationTask, "train_step", step)


def _targets_shuffled(task: type) -> None:
    """A sequence-to-sequence task's targets (and their masks) paired with another source."""

    def step(original, self, inputs, *rest):
        order = tf.random.shuffle(tf.range(tf.shape(inputs["targets"])[0]))
        moved = {k: tf.gather(inputs[k], order) for k in ("targets", "target_mask")}
        return original(self, {**inputs, **moved}, *rest)

    _patch(task, "train_step", step)


def _translation_targets_shuffled() -> None:
    from models.transformer.task import TranslationTask

    _targets_shuffled(TranslationTask)


def _transcripts_shuffled() -> None:
    from models.asr_transformer.task import SpeechRecognitionTask

    _targets_shuffled(SpeechRecognitionTask)


def _generator_loss_sign_flipped() -> None:
    from models.tasks import image_generation

    original = image_generation.generator_loss
    image_generation.generator_loss = lambda loss, fake: -original(loss, fake)


BREAKAGES = {
    "classification_labels_shuffled": _classification_labels_shuffled,
    "detection_classes_off_by_one": _detection_classes_off_by_one,
    "instance_masks_shifted": _instance_masks_shifted,
    "segmentation_classes_off_by_one": _segmentation_classes_off_by_one,
    "masked_tokens_shuffled": _masked_tokens_shuffled,
    "sentence_labels_shuffled": _sentence_labels_shuffled,
    "translation_targets_shuffled": _translation_targets_shuffled,
    "transcripts_shuffled": _transcripts_shuffled,
    "generator_loss_sign_flipped": _generator_loss_sign_flipped,
}


def apply(name: str) -> None:
    """Breaks the code as `name` says, in this process."""
    BREAKAGES[name]()
