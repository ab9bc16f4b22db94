"""Every gin recipe under configs/ parses, builds its schedule and optimiser, and composes with
the slice files: a slice file after the recipe changes the global batch and nothing else."""

from __future__ import annotations

import gin
import pytest
from zoo_testing import plan

from models.core import gin_config, optimization, registry
from models.core.recipe import RunSpec
from models.core.settings import TrainSettings

registry.load_all()  # every family and task, so that recipes' @references resolve
RECIPES = sorted(
    f"{p.parent.name}/{p.name}"
    for p in registry.CONFIGS_DIR.glob("*/*.gin")
    if p.parent.name not in ("slices", "data")
)
IMAGENET = [r for r in RECIPES if "imagenet" in r and not r.startswith("dcgan/")]
COCO = [r for r in RECIPES if r.endswith("_coco.gin")]
# BERT's published recipes: Wikipedia/BooksCorpus records given with --data_dir.
BERT_PUBLISHED = [r for r in RECIPES if r.startswith("bert/bert_") and "squad" not in r]
SQUAD = [r for r in RECIPES if r.startswith("bert/bert_") and "squad" in r]
# The Transformer's published recipes: WMT English-German records given with --data_dir.
TRANSLATION = [r for r in RECIPES if r.startswith("transformer/") and r.endswith("_wmt.gin")]
# DeepLab's published recipes: VOC-schema records (Pascal VOC, Cityscapes) given with --data_dir.
SEGMENTATION = [r for r in RECIPES if r.startswith("deeplab/") and r != "deeplab/default.gin"]
# The GANs' published recipes: ImageNet at the model's size, scored by Inception-v3's FID.
GAN = [r for r in RECIPES if r.startswith(("compare_gan/biggan_", "dcgan/dcgan_"))]
# The ASR Transformer's: LibriSpeech records given with --data_dir.
SPEECH = [r for r in RECIPES if r.startswith("asr_transformer/") and "default" not in r]
# Vaswani et al. 2017, Table 3: (layers a stack, width, feed-forward width, heads, dropout).
PAPER_TRANSFORMERS = {
    "transformer_base": (6, 512, 2048, 8, 0.1),
    "transformer_big": (6, 1024, 4096, 16, 0.3),
}
TPU_SLICES = sorted(p.name for p in (registry.CONFIGS_DIR / "slices").glob("v3-*.gin"))


def _resolved(files: list[str], slice_name: str | None = None) -> tuple[set[str], int]:
    """(bindings other than the batch, global batch) of the parsed files, after building the
    recipe's schedule and optimiser."""
    gin.clear_config()
    gin_config.parse(files, [], slice_name=slice_name)
    settings = TrainSettings()
    optimization.build_optimizer(plan(100, 100 * 50, settings.global_batch_size), "model")
    bindings = {
        line
        for line in gin.config_str().splitlines()
        if " = " in line and not line.startswith("train.global_batch_size")
    }
    return bindings, settings.global_batch_size


def test_every_family_has_a_default_and_a_real_dataset_recipe():
    families = {r.split("/")[0] for r in RECIPES}
    assert {"amoebanet", "efficientnet", "inception", "mnasnet", "mobilenet", "resnet"} <= families
    assert "retinanet" in families
    for family in families:
        assert f"{family}/default.gin" in RECIPES
        published = IMAGENET + COCO + BERT_PUBLISHED + TRANSLATION + GAN + SEGMENTATION + SPEECH
        assert any(r.startswith(f"{family}/") for r in published), family


@pytest.mark.parametrize("recipe", SPEECH)
def test_speech_recipe_trains_a_tensor2tensor_size_to_a_wer_target(recipe):
    gin_config.parse([recipe], [])
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    assert spec.model.startswith("asr_transformer_t2t_") and task.primary_metric == "wer"
    settings = TrainSettings()
    assert settings.target_metric == "wer" and 0.0 < settings.target_value < 0.3


@pytest.mark.parametrize("recipe", COCO)
def test_coco_recipe_builds_a_detector_of_coco_size_with_an_ap_target(recipe):
    gin_config.parse([recipe], [])
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    # 300 (MLPerf's SSD), 320 and 640 (the Object Detection API's SSDs; 640 also Model
    # Garden's RetinaNet), 1024 (its Mask R-CNN), 1344 (MLPerf's Mask R-CNN, 800-1333 images)
    assert task.input.image_size in (300, 320, 640, 1024, 1344) and task.primary_metric == "AP"
    settings = TrainSettings()
    assert settings.target_metric == "AP" and 0.2 < settings.target_value < 0.5


@pytest.mark.parametrize("recipe", SEGMENTATION)
def test_segmentation_recipe_is_model_gardens_crop_batch_and_miou_target(recipe):
    alone, batch = _resolved([recipe])
    assert _resolved([recipe, "slices/v3-32.gin"]) == (alone, 4096)
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    # Model Garden's seg_deeplabv3plus_pascal / _cityscapes: 512x512 and 512x1024 crops
    crop = [512, 1024] if "cityscapes" in recipe else [512, 512]
    assert task.input.train_size == crop and batch == 16
    assert "deeplab.use_sync_bn = True" in alone
    settings = TrainSettings()
    assert settings.target_metric == "mean_iou" and 0.75 < settings.target_value < 0.8


@pytest.mark.parametrize("recipe", IMAGENET)
def test_imagenet_recipe_composes_with_slice_files(recipe):
    alone, _ = _resolved([recipe])
    for slice_file, batch in (("slices/v3-32.gin", 4096), ("slices/v3-128.gin", 16384)):
        assert _resolved([recipe, slice_file]) == (alone, batch)
        assert _resolved([slice_file, recipe]) == (alone, batch)  # the slice file wins anyway
        assert _resolved([recipe], slice_name=slice_file[7:-4]) == (alone, batch)  # --slice
    spec = RunSpec().check()
    task = spec.task(model=spec.model)
    assert task.input.num_classes == 1000 and task.input.label_offset == 1
    assert TrainSettings().target_metric == "top_1_accuracy"


@pytest.mark.parametrize("recipe", BERT_PUBLISHED)
def test_bert_recipe_composes_with_slice_files_at_its_papers_shapes(recipe):
    alone, batch = _resolved([recipe])
    assert _resolved([recipe, "slices/v3-128.gin"]) == (alone, 16384)
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    lengths = {128: 20, 512: 80 if "pretrain" in recipe else 76}  # Google's and MLPerf's
    assert lengths[task.input.seq_length] == task.input.max_predictions
    assert batch == (8192 if "lamb" in recipe else 256)


@pytest.mark.parametrize("slice_file", TPU_SLICES)
def test_tpu_slice_files_set_only_the_batch(slice_file):
    gin_config.parse([f"slices/{slice_file}"], [])
    bindings = [line for line in gin.config_str().splitlines() if " = " in line]
    assert len(bindings) == 1 and bindings[0].startswith("train.global_batch_size = ")


@pytest.mark.parametrize("recipe", SQUAD)
def test_squad_recipe_is_the_papers_fine_tuning_with_an_f1_target(recipe):
    alone, batch = _resolved([recipe])
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    assert task.input.seq_length == 384 and batch == 32 and task.primary_metric == "f1"
    settings = TrainSettings()
    assert settings.target_metric == "f1" and 0.88 <= settings.target_value <= 0.91


@pytest.mark.parametrize("recipe", TRANSLATION)
def test_translation_recipe_is_a_papers_transformer_with_a_bleu_target_and_a_token_batch(recipe):
    alone, batch = _resolved([recipe])
    assert _resolved([recipe, "slices/v3-128.gin"]) == (alone, 16384)
    spec = RunSpec().check()
    # The variant's builder arguments (no weights built); the recipe binds dropout with gin.
    arguments = registry.model_entry(spec.model).arguments({})
    arguments["dropout_rate"] = gin.query_parameter("transformer.dropout_rate")
    layers, width, inner, heads, dropout = PAPER_TRANSFORMERS[spec.model]
    sizes = ("num_layers", "hidden_size", "inner_size", "num_heads")
    assert tuple(arguments[name] for name in sizes) == (layers, width, inner, heads)
    mlperf = "mlperf" in recipe  # MLPerf's big Transformer keeps Tensor2Tensor's base dropout
    assert arguments["dropout_rate"] == (0.1 if mlperf else dropout)
    assert gin.query_parameter("transformer.extra_decode_length") == 50  # source + 50 tokens
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    assert task.primary_metric == "bleu"
    assert (task.beam_size, task.alpha, task.label_smoothing) == (4, 0.6, 0.1)
    settings = TrainSettings()
    targets = {"transformer_base": 27.3, "transformer_big": 28.4}  # the paper's Table 2
    assert settings.target_metric == "bleu"
    assert settings.target_value == (25.0 if mlperf else targets[spec.model])
    assert settings.evaluations["validation"].split == "test"  # newstest2014
    # Batches of thousands of tokens, at a rate that batch does not scale: the inverse square
    # root schedule's peak, d^-0.5 x warmup^-0.5 (the paper), x 2.0 (MLPerf's constant).
    tokens = batch * task.input.max_length
    assert tokens >= 32768 and gin.query_parameter("learning_rate.base_batch_size") is None
    warmup = gin.query_parameter("learning_rate.warmup_steps")
    peak = (2.0 if mlperf else 1.0) * width**-0.5 * warmup**-0.5
    assert gin.query_parameter("learning_rate.base_lr") == pytest.approx(peak, rel=1e-3)
    assert gin.query_parameter("learning_rate.decay") == "rsqrt"
    if mlperf:  # the submission's static [rows, 256] shape, whole rows a replica on v3-32
        assert task.input.max_length == 256 and task.input.bucket_lengths == (256,)
        assert batch % 32 == 0


@pytest.mark.parametrize("recipe", GAN)
def test_gan_recipe_is_imagenet_at_its_models_size_with_an_fid_target(recipe):
    alone, batch = _resolved([recipe])
    assert _resolved([recipe, "slices/v3-128.gin"]) == (alone, 16384)
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir="/nonexistent")  # the data is read lazily
    assert task.input.num_classes == 1000 and task.input.label_offset == 1
    assert task.input.image_size == registry.model_entry(spec.model).image_size
    assert batch == (2048 if spec.model.startswith("biggan") else 128)
    gin.parse_config(["sample_quality.inception_weights = '/weights.h5'"])
    task = spec.task(model=spec.model, data_dir="/nonexistent")
    assert TrainSettings().target_metric == task.primary_metric == "fid"


@pytest.mark.parametrize("recipe", ["dcgan/default.gin", "compare_gan/default.gin", *GAN])
@pytest.mark.parametrize("slice_file", ["cpu-1", "cpu-4", "v3-128"])
def test_gan_recipe_keeps_its_learning_rates_on_every_slice(recipe, slice_file):
    """DCGAN and BigGAN set their rates per model, not per batch: a slice changes the batch
    only (benchmarks.run's cpu-1 at batch 32 once halved them and missed the target)."""
    rates = {}
    for slice_name in (None, slice_file):
        gin.clear_config()
        gin_config.parse([recipe], [], slice_name=slice_name)
        steps = plan(100, 100 * 50, TrainSettings().global_batch_size)
        rates[slice_name] = {
            scope: float(optimization.build_optimizer(steps, scope).learning_rate)
            for scope in ("generator", "discriminator")
        }
    assert rates[slice_file] == rates[None]
