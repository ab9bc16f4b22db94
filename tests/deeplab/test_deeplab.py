"""DeepLab's default recipe outside training: the exported signature answers a class map on each
image's own pixels, mean IoU is the confusion-matrix IoU a user would compute with numpy, the
evaluation padding and the void ring count nothing, the loss skips void pixels, and predict
tints the mask over the image."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.predict import predict_image
from models.core.recipe import RunSpec
from models.core.settings import EvalPlan
from models.deeplab.model import TORCHVISION_AUX_HEAD
from models.tasks.semantic_segmentation import iou_metrics

EVALUATION = EvalPlan("validation", "validation", "validation", 8, interval=1, steps=-1)


def default_task(*bindings: str, data_dir: str | None = None):
    """The default recipe's task (with `bindings`), on the built-in scenes or `data_dir`."""
    gin_config.parse(["deeplab/default.gin"], list(bindings), family="deeplab")
    registry.load_all()
    spec = RunSpec().check()
    return spec.task(model=spec.model, data_dir=data_dir, seed=0)


def validation_jpegs(voc_dir: str) -> list[bytes]:
    """Two validation scenes as JPEG bytes: one as written (128x128), one resized to 200x96."""
    first, second = sorted(Path(voc_dir, "JPEGImages").glob("val_*.jpg"))[:2]
    resized = tf.image.resize(tf.io.decode_jpeg(second.read_bytes()), [200, 96])
    return [first.read_bytes(), tf.io.encode_jpeg(tf.cast(resized, tf.uint8)).numpy()]


def test_serving_answers_a_class_map_on_each_images_own_pixels(digit_scenes_voc_dir: str):
    task = default_task()
    models = task.build_models()
    serve = task.serving_signatures(models)["serving_default"]
    answer = serve(tf.constant(validation_jpegs(digit_scenes_voc_dir)))
    assert answer["class_map"].shape == (2, 200, 128)  # the batch's largest height and width
    assert answer["image_size"].numpy().tolist() == [[128, 128], [200, 96]]
    maps = answer["class_map"].numpy()
    assert ((maps[0, :128] >= 0) & (maps[0, :128] < 6)).all() and (maps[0, 128:] == 255).all()
    assert ((maps[1, :, :96] >= 0) & (maps[1, :, :96] < 6)).all() and (maps[1, :, 96:] == 255).all()
    empty = serve(tf.constant([], tf.string))
    assert empty["class_map"].shape == (0, 0, 0) and empty["image_size"].shape == (0, 2)


def test_mean_iou_is_the_numpy_confusion_matrix_iou(digit_scenes_voc_dir: str):
    task = default_task()
    rng = np.random.default_rng(0)
    masks = rng.integers(0, 6, size=(4, 32, 32, 1)).astype(np.float32)
    masks[:, :3] = 255  # void rows count nowhere
    logits = rng.normal(size=(4, 32, 32, 6)).astype(np.float32)
    logits[..., 5] -= 10  # class 5 is never predicted
    confusion = task.confusion(tf.constant(logits), tf.constant(masks)).numpy()
    truth, predicted = masks[..., 0].ravel().astype(int), logits.argmax(-1).ravel()
    valid = truth != 255
    expected = np.bincount(truth[valid] * 6 + predicted[valid], minlength=36).reshape(6, 6)
    np.testing.assert_array_equal(confusion, expected)
    metrics = iou_metrics(confusion, task.input.class_names)
    ious = [
        ((truth == c) & (predicted == c) & valid).sum()
        / (((truth == c) | (predicted == c)) & valid).sum()
        for c in range(6)
    ]
    assert metrics["mean_iou"] == pytest.approx(np.mean(ious))
    assert metrics["iou_7"] == 0.0 and metrics["iou_background"] == pytest.approx(ious[0])
    assert metrics["pixel_accuracy"] == pytest.approx((truth == predicted)[valid].mean())


def test_a_class_absent_from_labels_and_predictions_is_left_out_of_the_mean():
    confusion = np.array([[5, 1, 0], [2, 4, 0], [0, 0, 0]])
    metrics = iou_metrics(confusion, ["background", "a", "b"])
    assert metrics["mean_iou"] == pytest.approx((5 / 8 + 4 / 7) / 2)
    assert metrics["iou_b"] == 0.0


def test_evaluation_padding_counts_nothing(digit_scenes_voc_dir: str):
    task = default_task()
    models = task.build_models()
    total, batch = task.num_examples("validation"), 8
    assert total % batch, "the last batch must hold padding"
    last = next(iter(task.build_inputs("validation", batch, None).skip(total // batch)))
    images, labels = last
    outputs = task.validation_step(last, models, [], EVALUATION)
    counted = task.aggregate_logs(None, {"confusion": outputs["confusion"].numpy()}, EVALUATION)
    real = total % batch
    kept = (images[:real], {key: value[:real] for key, value in labels.items()})
    alone = task.validation_step(kept, models, [], EVALUATION)["confusion"].numpy()
    np.testing.assert_array_equal(counted, alone)
    assert counted.sum() == int(tf.reduce_sum(tf.cast(labels["masks"] != 255, tf.int64)))


@pytest.mark.parametrize("top_k", [1.0, 0.2])
def test_the_loss_skips_void_pixels(digit_scenes_voc_dir: str, top_k: float):
    task = default_task(f"SemanticSegmentationTask.top_k_percent_pixels = {top_k}")
    images, labels = next(iter(task.build_inputs("train", 4, None)))
    masks = labels["masks"]
    assert bool(tf.reduce_any(masks == 255)), "the built-in masks have a void ring"
    logits = tf.random.stateless_normal([4, 24, 24, 6], seed=[1, 2])  # stride 4 of the crops
    upsampled = tf.image.resize(logits, masks.shape[1:3], "bilinear")
    loss = float(task.loss(logits, masks))
    truth = tf.cast(tf.where(masks == 255, 0.0, masks)[..., 0], tf.int32)
    valid = masks[..., 0] != 255
    per_pixel = tf.nn.sparse_softmax_cross_entropy_with_logits(truth, upsampled)
    # the mean over the hardest top_k of all pixels, where a void pixel never counts
    hardest = tf.sort(tf.reshape(tf.where(valid, per_pixel, -1.0), [-1]), direction="DESCENDING")
    count = min(int(top_k * int(tf.size(valid))), int(tf.reduce_sum(tf.cast(valid, tf.int32))))
    assert loss == pytest.approx(float(tf.reduce_mean(hardest[:count])), 1e-4)


def test_predict_tints_the_class_map_into_a_png(digit_scenes_voc_dir: str, tmp_path: Path):
    task = default_task()
    models = task.build_models()
    image = sorted(Path(digit_scenes_voc_dir, "JPEGImages").glob("val_*.jpg"))[0]
    output = tmp_path / "drawn.png"
    result = predict_image(task, models, str(image), str(output))
    drawn = tf.io.decode_png(output.read_bytes()).numpy()
    assert drawn.shape == (512, 512, 3)  # enlarged 4x, as the detectors' drawings
    assert result["prediction"].startswith("pixels: ")


@pytest.mark.parametrize(
    "binding, message",
    [
        ("deeplab.output_stride = 12", "deeplab.output_stride = 12: use one of 8, 16, 32"),
        ("deeplab.aspp_filters = 0", "deeplab.aspp_filters = 0: must be at least 1"),
        (
            "deeplab.decoder = False",
            "fixes decoder = True; no variant has backbone = 'mobilenet_v2', "
            "width_multiplier = 0.5, decoder = False",
        ),
    ],
)
def test_bad_model_settings_are_one_line(binding: str, message: str):
    with pytest.raises(UsageError, match=message):
        default_task(binding).build_models()


@pytest.mark.parametrize("stride, size", [(16, 8), (8, 16)])
def test_output_stride_sets_the_aspp_grid_and_rates(stride: int, size: int):
    model = registry.create_model(
        "deeplabv3plus_resnet50", num_classes=3, image_size=128, output_stride=stride
    )
    decoder = model.decoder.get_config()
    assert decoder["dilation_rates"] == [rate * 16 // stride for rate in (6, 12, 18)]
    features = model.backbone(tf.zeros([1, 128, 128, 3]))
    assert features[str(int(np.log2(stride)))].shape[1] == size
    assert model(tf.zeros([1, 128, 128, 3]))["logits"].shape == (1, 32, 32, 3)  # stride 4


@pytest.mark.slow
def test_deeplabv3_is_torchvisions_without_its_auxiliary_head():
    model = registry.create_model(
        "deeplabv3_resnet101", num_classes=21, image_size=128, stem_type="v0"
    )
    measured = registry.count_parameters(model, "trainable")
    assert measured + TORCHVISION_AUX_HEAD == 60_996_202  # torchvision's num_params
