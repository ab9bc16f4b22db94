"""--input_only: our shared classification pipeline against Model Garden's parser, same records."""

from __future__ import annotations

from official.core import input_reader
from official.vision.configs import image_classification as mg_configs
from official.vision.dataloaders import classification_input as mg_input

from benchmarks.throughput import measure
from models.core.errors import UsageError
from models.core.task import Task
from models.data.classification import ClassificationInput


def pipeline_of(task: Task) -> ClassificationInput:
    """The task's classification input pipeline; UsageError for a task that reads another."""
    pipeline = getattr(task, "input", None)
    if not isinstance(pipeline, ClassificationInput):
        raise UsageError(
            f"--input_only compares classification input pipelines; {type(task).__name__} "
            "reads no ClassificationInput"
        )
    return pipeline


def ours_dataset(pipeline: ClassificationInput, batch: int):
    """The project's training pipeline: read, shuffle, decode + random resized crop + flip."""
    return pipeline.dataset("train", batch)


def anchor_data_config(pipeline: ClassificationInput, batch: int) -> mg_configs.DataConfig:
    """Model Garden's DataConfig for the same files, batch, buffers, flip and dtype."""
    return mg_configs.DataConfig(
        input_path=",".join(pipeline.files("train")),
        global_batch_size=batch,
        is_training=True,
        dtype=pipeline.dtype.name,
        shuffle_buffer_size=pipeline.shuffle_buffer,
        cycle_length=pipeline.cycle_length,
        cache=pipeline.cache,
        aug_rand_hflip=pipeline.random_flip,
        aug_crop=pipeline.augmentation != "none",
    )


def anchor_dataset(pipeline: ClassificationInput, batch: int):
    """Model Garden's Decoder + classification Parser through its InputReader, same records."""
    params = anchor_data_config(pipeline, batch)
    parser = mg_input.Parser(
        output_size=[pipeline.image_size, pipeline.image_size],
        num_classes=pipeline.num_classes,
        aug_rand_hflip=params.aug_rand_hflip,
        aug_crop=params.aug_crop,
        dtype=params.dtype,
        crop_area_range=tuple(pipeline.crop_area_range),
    )
    reader = input_reader.InputReader(
        params, decoder_fn=mg_input.Decoder().decode, parser_fn=parser.parse_fn(True)
    )
    return reader.read()


def images_per_second(dataset, batch: int, warmup: int, count: int) -> dict:
    """images/s and ms per batch of `count` batches after `warmup` batches."""
    seconds = measure.time_batches(iter(dataset), warmup, count)
    result = measure.rates(seconds, count, batch)
    return {"images_per_s": result["examples_per_s"], "ms_per_batch": result["ms_per_step"]}


def measure_inputs(pipeline: ClassificationInput, batch: int, warmup: int, count: int) -> dict:
    """Both pipelines on the same TFRecords at the recipe's image size."""
    ours = images_per_second(ours_dataset(pipeline, batch), batch, warmup, count)
    anchor = images_per_second(anchor_dataset(pipeline, batch), batch, warmup, count)
    ours["name"] = "this project: models.data.classification.ClassificationInput"
    anchor["name"] = "Model Garden: classification_input.Decoder + Parser via core InputReader"
    return {
        "data_dir": pipeline.data_dir,
        "image_size": pipeline.image_size,
        "image_dtype": pipeline.dtype.name,
        "train_files": len(pipeline.files("train")),
        "ours": ours,
        "anchor": anchor,
        "ratio_ours_to_anchor": ours["images_per_s"] / anchor["images_per_s"],
    }
