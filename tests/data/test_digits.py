"""The built-in digits dataset: ImageNet schema, counts, caching and atomic writes."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from models.core.errors import UsageError
from models.data import builtin
from models.data.builtin import cache, digits

SCHEMA_KEYS = {
    "image/encoded",
    "image/format",
    "image/filename",
    "image/class/label",
    "image/class/synset",
    "image/height",
    "image/width",
    "image/colorspace",
    "image/channels",
}


def test_written_under_zoo_cache_dir(digits_dir: str, zoo_cache: Path) -> None:
    assert Path(digits_dir) == zoo_cache / "digits-v1"
    assert cache.cache_dir() == zoo_cache


def test_default_cache_dir_is_under_home(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("ZOO_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / ".cache" / "tpu-pod-zoo"


def test_shard_names_and_info(digits_dir: str) -> None:
    names = sorted(p.name for p in Path(digits_dir).iterdir())
    assert names == [
        "dataset_info.json",
        *[f"train-{i:05d}-of-00004" for i in range(4)],
        *[f"validation-{i:05d}-of-00002" for i in range(2)],
    ]
    info = json.loads((Path(digits_dir) / "dataset_info.json").read_text())
    assert info["num_classes"] == 10 and info["label_offset"] == 1
    assert info["num_train_examples"] + info["num_eval_examples"] == 1797
    assert info["num_eval_examples"] == 360
    assert info["classes"] == [str(d) for d in range(10)]


def test_records_follow_imagenet_schema(digits_dir: str, read_examples, value_of) -> None:
    split_labels = {}
    for split in ("train", "validation"):
        examples = read_examples([str(p) for p in Path(digits_dir).glob(f"{split}-*")])
        assert all(set(e.features.feature) == SCHEMA_KEYS for e in examples)
        split_labels[split] = Counter(value_of(e, "image/class/label") for e in examples)
        first = examples[0]
        assert value_of(first, "image/format") == b"JPEG"
        assert (
            value_of(first, "image/class/synset")
            == str(value_of(first, "image/class/label") - 1).encode()
        )
        image = Image.open(io.BytesIO(value_of(first, "image/encoded")))
        assert (image.format, image.mode, image.size) == ("JPEG", "RGB", (32, 32))
    assert sum(split_labels["train"].values()) == 1437
    assert sum(split_labels["validation"].values()) == 360
    for counts in split_labels.values():  # Stratified: every digit in both splits, 1-based.
        assert sorted(counts) == list(range(1, 11))
        assert min(counts.values()) >= 0.8 * max(counts.values())


def test_second_call_reuses_the_files(digits_dir: str) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in Path(digits_dir).iterdir()}
    assert builtin.prepare("digits") == digits_dir
    assert {p.name: p.stat().st_mtime_ns for p in Path(digits_dir).iterdir()} == before


def test_losing_a_concurrent_race_is_fine(digits_dir: str) -> None:
    staging = Path(tempfile.mkdtemp(dir=Path(digits_dir).parent))
    cache._publish(staging, Path(digits_dir))  # Another writer already renamed in.
    shutil.rmtree(staging)
    assert (Path(digits_dir) / "dataset_info.json").is_file()


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    def crash(directory: Path) -> None:
        (directory / "train-00000-of-00004").write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(digits, "write", crash)
    with pytest.raises(KeyboardInterrupt):
        digits.prepare(tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [cache.LOCKS]  # no dataset, half or whole


def test_concurrent_builders_build_once(tmp_path: Path) -> None:
    """Processes (here threads) that need a dataset at once wait for the one building it."""
    writes = []

    def write(directory: Path) -> None:
        writes.append(directory)
        time.sleep(0.2)
        (directory / "dataset_info.json").write_text("{}")

    with ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda _: cache.build_once("set", write, tmp_path), range(4)))
    assert built == [str(tmp_path / "set")] * 4 and len(writes) == 1


def test_unknown_builtin_suggests_nearest() -> None:
    with pytest.raises(UsageError, match="did you mean 'digits'"):
        builtin.prepare("digit")
