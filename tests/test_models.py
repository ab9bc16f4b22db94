"""Every registered variant (timm's tests/test_models.py): built full size, its parameters
against each published figure by the registry's one rule, and one training step on tiny input
for each architecture.

The step runs through the variant's own task (`synthetic_inputs`) and core's Trainer on a
one-device CPU strategy (--slice=cpu-1), at max(32, the variant's minimum) pixels, 3 classes,
batch 2, at full width, eagerly: tracing it would take 3-63 s a variant (ResNet-152: 20 s, at
any width), eagerly it takes 0.3-2.6 s (EfficientNet-B6 at full width: 61 s). A variant that only
scales another's architecture (`SCALED_CLASSIFIERS`) takes no step of its own, and a detector's
step (45-150 s on 2026-12-02) runs once per architecture: its variants that differ only in
backbone depth share every code path but the ResNet's, whose block kinds resnet10 and resnet50
cover. That the steps also trace and compile
with XLA is each family's default-recipe check (tests/test_family_defaults.py).
"""

from __future__ import annotations

import re

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from zoo_testing import DETECTION_TASKS, plan

from models.core import registry
from models.core.strategy import build_strategy
from models.core.trainer import Trainer, build_training_state
from models.tasks.adversarial import AdversarialPair
from models.tasks.auxiliary import AuxiliaryLogits

pytestmark = pytest.mark.slow  # every variant built full size: minutes on 2 cores
NAMES = registry.list_models()
TINY = {"batch": 2, "classes": 3, "image_size": 32}
# What a detector's architecture is without: its backbone's depth or kind, whose code paths the
# classifier families' steps cover; each architecture steps at its shallowest backbone (`_depth`).
BACKBONES = ("depth", "feature_extractor")
SEGMENTATION_TASK = "SemanticSegmentationTask"  # its steps read the built-in class masks


# Classifiers that scale an architecture another step covers, code path for code path
# (EfficientNet's compound coefficients; ResNet's depth within one block kind; AmoebaNet-D's
# cells and filters, amoebanet_d_small's step): built full size and counted like every
# variant, but no step of their own.
SCALED_CLASSIFIERS = {
    "amoebanet_d",
    *(f"efficientnet_b{i}" for i in range(1, 8)),
    *(f"resnet{depth}" for depth in (18, 34, 101, 152, 200)),
    *(f"bert_{size}" for size in ("mini", "small", "medium", "base", "large")),  # bert_tiny's
    "transformer_base",  # and transformer_tiny's
    "transformer_big",
    "dcgan_64",  # dcgan_32's, one block more
    *(f"biggan_{size}" for size in (128, 256, 512)),  # biggan_32's blocks, wider and more
    "deeplabv3plus_resnet101",  # deeplabv3plus_resnet50's, deeper
    "deeplabv3plus_mobilenetv2_050",  # deeplabv3plus_mobilenetv2's, narrower
}
# What a full-size build of a family needs to be quick: BigGAN's orthogonal initialisation takes
# ~50 s a build on 2 cores (QR of every kernel); counts do not depend on it.
QUICK_BUILD = {"compare_gan": {"initializer": "normal"}}
# Text models' steps: random sequences of 16 tokens over a 100-token vocabulary (their tasks'
# synthetic input reads no data).
TINY_TEXT = {
    "bert": (
        "MaskedLMTask.vocab_size = 100",
        "pretraining_input.seq_length = 16",
        "pretraining_input.max_predictions_per_seq = 4",
    ),
    "transformer": ("TranslationTask.vocab_size = 100", "translation_input.max_length = 16"),
    "asr_transformer": ("speech_input.max_seconds = 0.5", "speech_input.max_target_length = 8"),
}


def _step_names() -> list[str]:
    """Each classifier architecture (resnet10 for basic blocks, resnet50 for bottlenecks,
    efficientnet_b0), and each detector architecture at its shallowest backbone."""
    names, architectures = [], set()
    for name in sorted(NAMES, key=lambda n: (_depth(registry.model_entry(n)), n)):
        entry = registry.model_entry(name)
        if name in SCALED_CLASSIFIERS:
            continue
        if entry.task in DETECTION_TASKS:
            fixed = entry.fixed.items()
            others = sorted((key, value) for key, value in fixed if key not in BACKBONES)
            if (entry.family, *others) in architectures:
                continue
            architectures.add((entry.family, *others))
        names.append(name)
    return sorted(names)


def _depth(entry: registry.ModelEntry) -> int:
    """A variant's backbone depth: its `depth`, else the number in its feature extractor's name
    (resnet50_v1: 50), else 0."""
    found = re.search(r"\d+", str(entry.fixed.get("feature_extractor", "")))
    return int(entry.fixed.get("depth", found.group() if found else 0))


STEP_NAMES = _step_names()


def _cases() -> list:
    """(variant, figure) for every published figure, plus (variant, None) where no figure is
    of the variant as registered (its full-size build is still checked). A figure the variant
    does not meet is an expected failure, for the reason its registration gives. A variant's
    cases run on one pytest-xdist worker, which builds each configuration once (_COUNTS)."""
    cases = []
    for name in NAMES:
        published = registry.model_entry(name).published
        native = [] if any(not figure.config for figure in published) else [None]
        for figure in (*published, *native):
            disagrees = figure is not None and figure.disagrees
            marks = [pytest.mark.xfail(strict=True, reason=figure.disagrees)] if disagrees else []
            marks.append(pytest.mark.xdist_group(f"count-{name}"))
            label = f"{name}-{figure.figure}" if figure else f"{name}-unpublished"
            cases.append(pytest.param(name, figure, marks=marks, id=label))
    return cases


@pytest.fixture(autouse=True)
def _fresh_keras():
    yield
    tf_keras.backend.clear_session()


# (variant, configuration) -> its parameter counts by (counting rule, part): one full-size
# build (and its checks) per configuration, however many published figures describe it.
_COUNTS: dict[tuple, dict[tuple[str, str], int]] = {}


@pytest.mark.parametrize(("name", "figure"), _cases())
def test_full_size_parameter_count(name, figure):
    entry = registry.model_entry(name)
    # ImageNet's classes, or COCO's for detectors, built with the combined NMS: NMS has no
    # weights, and Model Garden's default (v2) adds graph per class (a minute a build at 91)
    detector = entry.task in DETECTION_TASKS
    segmenter = entry.task == SEGMENTATION_TASK
    text = entry.image_size is None  # a text model (BERT: Google's uncased vocabulary)
    config = {} if text else {"num_classes": 91 if detector else 21 if segmenter else 1000}
    config.update(figure.config if figure else {})
    key = (name, tuple(sorted(config.items())))
    if key not in _COUNTS:
        with tf.variable_creator_scope(_zero_initialised):
            _COUNTS[key] = _build_and_count(entry, config, detector, segmenter)
    if figure is not None:
        measured = _COUNTS[key][(figure.counting, figure.part)]
        assert figure.admits(measured), f"{measured:,} vs {figure.figure} ({figure.source})"


def _zero_initialised(next_creator, **kwargs) -> tf.Variable:
    """A variable of its declared shape filled with zeros, not drawn from its initialiser: a
    count needs shapes, and full-size random draws (BERT-large: 340M) cost seconds a build."""
    shape, dtype = kwargs.get("shape"), kwargs.get("dtype")
    if callable(kwargs.get("initial_value")) and shape is not None and dtype is not None:
        if tf.TensorShape(shape).is_fully_defined():
            kwargs["initial_value"] = lambda: tf.zeros(shape, dtype)
    return next_creator(**kwargs)


def _build_and_count(entry, config: dict, detector: bool, segmenter: bool) -> dict:
    """Builds the variant full size, checks its input and output shapes, and counts its
    parameters as each of its published figures counts them."""
    name = entry.name
    if entry.image_size is None:
        return _counts(entry, _check_text_model(name, config))
    if detector:
        batched_nms(entry)
    config = {**config, **QUICK_BUILD.get(entry.family, {})}
    model = registry.create_model(name, **config)
    size = config.get("image_size", entry.image_size)
    if isinstance(model, AdversarialPair):
        _check_gan(model, size)
    elif detector:  # a subclassed model: its backbone takes the image
        assert model.backbone.input_shape == (None, size, size, 3)
    elif segmenter:  # fully convolutional: logits at stride 4 (v3+) or the output stride (v3)
        logits = model(tf.zeros([1, size, size, 3]), training=False)["logits"]
        assert logits.shape[0] == 1 and logits.shape[3] == config["num_classes"]
        assert size // logits.shape[1] in (4, 8, 16, 32)
    else:
        network = model.network if isinstance(model, AuxiliaryLogits) else model  # eval's
        assert network.input_shape == (None, size, size, 3)
        assert network.output_shape == (None, 1000)
    return _counts(entry, model)


def _counts(entry, model) -> dict[tuple[str, str], int]:
    """The model's parameter counts by (counting rule, part) of its published figures."""
    ways = {(figure.counting, figure.part) for figure in entry.published}
    return {
        (rule, part): registry.count_parameters(getattr(model, part) if part else model, rule)
        for rule, part in ways
    }


def _check_gan(pair: AdversarialPair, size: int) -> None:
    """A GAN at its native size: the shapes of the generator's images and the discriminator's
    logits, traced on symbolic inputs (a BigGAN-512 forward pass takes seconds on a CPU)."""
    inputs = {
        "noise": tf_keras.Input([pair.z_dim], 2),
        "label": tf_keras.Input([], 2, dtype=tf.int32),
    }
    images = pair.generator(inputs)
    assert images.shape == (2, size, size, pair.channels)
    assert pair.discriminator({"image": images, "label": inputs["label"]}).shape == (2,)


def _check_text_model(name: str, config: dict) -> tf_keras.Model:
    """BERT at its defaults (30,522 tokens, 512 positions): its heads' logits; the Transformer
    at the paper's 37,000 shared tokens and the ASR Transformer at its 31 characters: their
    target logits. The model, for counting."""
    model = registry.create_model(name, **config)
    ids = tf.zeros([2, 8], tf.int32)
    family = registry.model_entry(name).family
    if family == "transformer":
        assert model({"inputs": ids + 1, "targets": ids + 1}).shape == (2, 8, 37000)
    elif family == "asr_transformer":  # 8 frames of 80 mel bins, 31 characters
        features = {"features": tf.zeros([2, 8, 80]), "feature_mask": tf.ones([2, 8], tf.int32)}
        assert model({**features, "targets": ids + 1})["logits"].shape == (2, 8, 31)
    else:
        features = {k: ids for k in ("input_word_ids", "input_mask", "input_type_ids")}
        outputs = model({**features, "masked_lm_positions": ids[:, :3]})
        assert outputs["masked_lm"].shape == (2, 3, 30522)
        assert outputs["next_sentence"].shape == (2, 2)
    return model


def batched_nms(entry: registry.ModelEntry) -> None:
    """The combined NMS for a detector's build: gin's `detections` for single-stage detectors,
    the builder's own setting for two-stage ones."""
    setting = "detections" if entry.task == "DetectionTask" else entry.builder.__name__
    gin.parse_config([f"{setting}.nms_version = 'batched'"])


def test_each_detector_architecture_takes_a_step():
    detectors = {
        "retinanet_resnet18_fpn",
        "mask_rcnn_resnet18_fpn",
        "faster_rcnn_resnet18_fpn",
        "ssd_mobilenet_v2_fpnlite",
        "ssd_resnet34_300",
        "faster_rcnn_resnet50_v1",  # the Object Detection API's two-stage, on C4
    }
    assert detectors <= set(STEP_NAMES)


@pytest.mark.parametrize("name", STEP_NAMES)
def test_one_training_step_on_tiny_input(name, eagerly):
    entry = registry.model_entry(name)
    size = max(TINY["image_size"], entry.min_image_size)
    if entry.image_size is None:
        gin.parse_config(TINY_TEXT[entry.family])
    elif entry.task in DETECTION_TASKS:  # the built-in scenes' own classes
        gin.parse_config([f"detection_input.image_size = {size}"])
    elif entry.task == SEGMENTATION_TASK:  # the built-in scenes' class masks
        gin.parse_config([f"segmentation_input.image_size = {size}"])
    else:
        gin.parse_config(
            [
                f"classification_input.image_size = {size}",
                f"classification_input.num_classes = {TINY['classes']}",
            ]
        )
    task = entry.task_class()(model=name, seed=0)
    strategy = build_strategy(slice_name="cpu-1")
    state = build_training_state(task, strategy, plan(1, 1, TINY["batch"]))
    trainer = Trainer(task, strategy, state, TINY["batch"], synthetic_input=True)
    logs = trainer.train(tf.constant(1))
    losses = [float(value) for key, value in logs.items() if key.endswith("loss")]
    assert losses and np.isfinite(losses).all(), logs
    assert int(state.global_step.numpy()) == 1
