"""Built-in datasets cut to one small batch, the same examples in every split: what the
memorisation checks (tests/test_memorisation.py) train and evaluate on through the real input
pipelines. Each folder is written once per test session into the dataset cache, atomically
(cache.build_once), in its dataset's own schema: record shards, dataset_info.json with the new
counts, and the files the evaluation reads (COCO annotations, SQuAD JSON, reference texts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import tensorflow as tf

from models.data import builtin
from models.data.builtin import cache

SHARD = "{split}-00000-of-00001"


def one_batch(name: str, examples: int) -> str:
    """The built-in dataset `name`, cut to its first `examples` training examples, written as
    every split it has; returns the folder."""
    source = Path(builtin.prepare(name))
    write = {"wordnet_glosses": _sentences, "wordnet_qa": _questions}.get(name, _records)
    return cache.build_once(
        f"one-batch-{source.name}-{examples}", lambda out: write(source, out, examples)
    )


def _splits(source: Path) -> list[str]:
    return sorted({p.name.split("-")[0] for p in source.glob("*-00000-of-*")})


def _records(source: Path, out: Path, examples: int) -> None:
    """First `examples` records of the train shards as each split's one shard; the other files
    copied, and for COCO-schema data the annotations of those images alone."""
    train = sorted(str(p) for p in source.glob("train-*-of-*"))
    first = tf.data.TFRecordDataset(train).take(examples)
    records = [_renumbered(record.numpy(), i) for i, record in enumerate(first)]
    assert len(records) == examples, f"{source} has {len(records)} training records"
    splits = _splits(source)
    for split in splits:
        with tf.io.TFRecordWriter(str(out / SHARD.format(split=split))) as writer:
            for record in records:
                writer.write(record)
    for path in source.iterdir():
        if path.is_file() and "-of-" not in path.name and path.name != "dataset_info.json":
            shutil.copy(path, out / path.name)
    if (source / "instances_train.json").exists():
        _coco_annotations(source, out, records, splits)
    if (source / "train.en").exists():
        _parallel_texts(out, records, splits)
    info = json.loads((source / "dataset_info.json").read_text())
    for key in [k for k in info if k.startswith("num_") and k.endswith("_examples")]:
        info[key] = examples
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1))


def _renumbered(record: bytes, index: int) -> bytes:
    """The record, its `unique_id` (a sentence pair's index in its split) set to `index`."""
    example = tf.train.Example.FromString(record)
    if "unique_id" not in example.features.feature:
        return record
    example.features.feature["unique_id"].int64_list.value[:] = [index]
    return example.SerializeToString()


def _coco_annotations(source: Path, out: Path, records: list[bytes], splits: list[str]) -> None:
    """instances_<split>.json for each split: the training annotations of `records`' images."""
    ids = {
        int(tf.train.Example.FromString(r).features.feature["image/source_id"].bytes_list.value[0])
        for r in records
    }
    coco = json.loads((source / "instances_train.json").read_text())
    coco["images"] = [image for image in coco["images"] if image["id"] in ids]
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in ids]
    for split in splits:
        (out / f"instances_{split}.json").write_text(json.dumps(coco))


def _parallel_texts(out: Path, records: list[bytes], splits: list[str]) -> None:
    """The sentence pairs of `records` as each split's plain-text files (sacreBLEU's input)."""
    for language in ("en", "de"):
        lines = [
            tf.train.Example.FromString(r).features.feature[language].bytes_list.value[0].decode()
            for r in records
        ]
        for split in splits:
            (out / f"{split}.{language}").write_text("\n".join(lines) + "\n")


def _sentences(source: Path, out: Path, examples: int) -> None:
    """The first `examples` rows of train.tsv as train.tsv and dev.tsv."""
    lines = (source / "train.tsv").read_text().splitlines()[: examples + 1]
    for split in ("train", "dev"):
        (out / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    info = json.loads((source / "dataset_info.json").read_text())
    labels = [line.split("\t")[1] for line in lines[1:]]
    majority = max(set(labels), key=labels.count)
    for split in ("train", "dev"):
        info[f"num_{split}_examples"] = examples
        info[f"{split}_majority_class"] = majority
        info[f"{split}_majority_fraction"] = labels.count(majority) / examples
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1))


def _questions(source: Path, out: Path, examples: int) -> None:
    """The first `examples` questions of the validation JSON, converted as both splits by the
    zoo's SQuAD converter with the built-in vocabulary and windows."""
    from models.data.convert import squad

    data = json.loads((source / "validation.json").read_text())
    kept, count = [], 0
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][: examples - count]
            if qas and count < examples:
                kept.append({"title": article["title"], "paragraphs": [{**paragraph, "qas": qas}]})
                count += len(qas)
    cut = out.parent / f"{out.name}.json"
    cut.write_text(json.dumps({"version": data["version"], "data": kept}))
    info = json.loads((source / "dataset_info.json").read_text())
    windows = squad.Windows(**{k: info[k] for k in squad.WINDOW_FLAGS if k in info})
    try:
        for split in ("train", "validation"):
            squad.convert(str(cut), str(source / "vocab.txt"), str(out), split, windows)
    finally:
        cut.unlink()
