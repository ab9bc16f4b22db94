"""The image-folder converter: schema, labels, validation modes and one-line CLI errors."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from zoo_testing import run_converter

from models.core.errors import UsageError
from models.data.classification import ClassificationInput
from models.data.convert.image_folder import convert

REPO_ROOT = Path(__file__).resolve().parents[2]
CLASSES = ["cat", "dog", "fish"]
COLOURS = {"cat": (220, 20, 20), "dog": (20, 220, 20), "fish": (20, 20, 220)}  # Red/green/blue.


def save_image(path: Path, colour: tuple[int, int, int], mode: str = "RGB") -> None:
    """A 16x16 image of one colour; format from the suffix, colour model from mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), colour).convert(mode).save(path)


@pytest.fixture
def image_tree(tmp_path: Path) -> Path:
    """ROOT/<class>/ with 3 images per class, one PNG with alpha, one grayscale, one stray file."""
    root = tmp_path / "images"
    for name in CLASSES:
        for index in range(3):
            save_image(root / name / f"{name}_{index}.jpg", COLOURS[name])
    save_image(root / "dog" / "dog_png.PNG", COLOURS["dog"], "RGBA")
    save_image(root / "cat" / "cat_gray.JPEG", COLOURS["cat"], "L")
    (root / "fish" / "notes.txt").write_text("not an image")
    return root


def records(directory: Path, split: str) -> list[dict]:
    """Every record of a split as {key: single value}."""
    import tensorflow as tf

    rows = []
    for record in tf.data.TFRecordDataset(sorted(str(p) for p in directory.glob(f"{split}-*"))):
        example = tf.train.Example.FromString(record.numpy())
        rows.append(
            {
                key: (value.bytes_list.value or value.int64_list.value)[0]
                for key, value in example.features.feature.items()
            }
        )
    return rows


def check_record(row: dict) -> None:
    """Label matches synset, the image is a 16x16 RGB JPEG whose colour is its class."""
    synset = row["image/class/synset"].decode()
    assert row["image/class/label"] == CLASSES.index(synset) + 1
    assert row["image/format"] == b"JPEG" and row["image/colorspace"] == b"RGB"
    assert (row["image/height"], row["image/width"], row["image/channels"]) == (16, 16, 3)
    image = Image.open(io.BytesIO(row["image/encoded"]))
    assert (image.format, image.mode) == ("JPEG", "RGB")
    if "gray" not in row["image/filename"].decode():
        assert int(np.argmax(np.asarray(image).mean(axis=(0, 1)))) == CLASSES.index(synset)


def test_fraction_split_writes_schema(image_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    info = convert(
        str(image_tree), str(out), validation_fraction=0.34, train_shards=3, progress=False
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        "train-00000-of-00003",
        "train-00001-of-00003",
        "train-00002-of-00003",
        "validation-00000-of-00002",
        "validation-00001-of-00002",
    ]
    assert json.loads((out / "dataset_info.json").read_text()) == info
    assert info["classes"] == CLASSES and info["num_classes"] == 3 and info["label_offset"] == 1
    train, validation = records(out, "train"), records(out, "validation")
    assert (len(train), len(validation)) == (info["num_train_examples"], info["num_eval_examples"])
    assert (len(train), len(validation)) == (8, 3)  # One of each class held out (stratified).
    assert sorted(r["image/class/label"] for r in validation) == [1, 2, 3]
    for row in train + validation:
        check_record(row)
    assert {r["image/filename"] for r in train + validation} >= {b"dog_png.PNG", b"cat_gray.JPEG"}
    data = ClassificationInput(data_dir=str(out), num_classes=3, image_size=8)
    data.validate()
    images, labels = next(iter(data.dataset("validation", 3)))
    assert images.shape == (3, 8, 8, 3) and sorted(labels.numpy()) == [0, 1, 2]


def test_flat_validation_folder_with_labels_file(image_tree: Path, tmp_path: Path) -> None:
    flat = tmp_path / "val"
    names = {"b.jpg": "fish", "a.jpg": "dog", "c.png": "cat"}
    for filename, name in names.items():
        save_image(flat / filename, COLOURS[name])
    labels = tmp_path / "labels.txt"
    labels.write_text("dog\nfish\ncat\n")  # In sorted file-name order: a, b, c.
    out = tmp_path / "out"
    convert(str(image_tree), str(out), str(flat), str(labels), progress=False)
    validation = records(out, "validation")
    assert {r["image/filename"].decode(): r["image/class/synset"].decode() for r in validation} == (
        names
    )
    for row in validation:
        check_record(row)


def test_validation_folder_with_class_subfolders(image_tree: Path, tmp_path: Path) -> None:
    save_image(tmp_path / "val" / "fish" / "f.jpg", COLOURS["fish"])
    out = tmp_path / "out"
    info = convert(str(image_tree), str(out), str(tmp_path / "val"), progress=False)
    assert (info["num_train_examples"], info["num_eval_examples"]) == (11, 1)
    assert [r["image/class/label"] for r in records(out, "validation")] == [3]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Runs the converter as its users do."""
    return run_converter("image_folder", *args, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def test_unreadable_image_leaves_no_partial_dataset(image_tree: Path, tmp_path: Path) -> None:
    broken = image_tree / "dog" / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=r"cannot read image .*broken.jpg: not a JPEG or PNG"):
        convert(str(image_tree), str(out), train_shards=12, progress=False)
    assert list(out.iterdir()) == []  # no shards, finished or partial: the folder is reusable
    broken.unlink()
    convert(str(image_tree), str(out), train_shards=12, progress=False)
    assert (len(records(out, "train")), len(records(out, "validation"))) == (8, 3)


def test_cli_holds_out_a_stratified_validation_split_by_default(
    image_tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = run_cli(f"--input_dir={image_tree}", f"--output_dir={out}", "--train_shards=2")
    assert result.returncode == 0, result.stderr
    assert "wrote 8 train and 3 validation examples of 3 classes" in result.stdout
    # 0.1 of 3 or 4 images rounds to none: each class still gives one.
    assert sorted(r["image/class/label"] for r in records(out, "validation")) == [1, 2, 3]
    assert len(records(out, "train")) == 8
    info = json.loads((out / "dataset_info.json").read_text())
    assert (info["num_train_examples"], info["num_eval_examples"]) == (8, 3)


def test_cli_validation_fraction_zero_writes_no_validation(
    image_tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = run_cli(f"--input_dir={image_tree}", f"--output_dir={out}", "--validation_fraction=0")
    assert result.returncode == 0, result.stderr
    assert len(records(out, "train")) == 11 and not list(out.glob("validation-*"))


def test_cli_larger_fraction_is_stratified(tmp_path: Path) -> None:
    for name in CLASSES:
        for index in range(10):
            save_image(tmp_path / "images" / name / f"{index}.jpg", COLOURS[name])
    out = tmp_path / "out"
    result = run_cli(
        f"--input_dir={tmp_path / 'images'}", f"--output_dir={out}", "--validation_fraction=0.2"
    )
    assert result.returncode == 0, result.stderr
    labels = sorted(r["image/class/label"] for r in records(out, "validation"))
    assert labels == [1, 1, 2, 2, 3, 3] and len(records(out, "train")) == 24


def test_help_documents_validation_fraction() -> None:
    result = run_cli("--help")
    text = " ".join((result.stdout + result.stderr).split())
    assert "--validation_fraction" in text
    assert "Default 0.1 without --validation_dir; 0 writes no validation split" in text


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing_input", "--input_dir .* is not a directory"),
        ("no_images", "has no .jpg/.jpeg/.png images"),
        ("unknown_class", r"line 2: 'dgo' is not a class of --input_dir \(did you mean 'dog'\?\)"),
        ("count_mismatch", "has 2 labels but --validation_dir .* has 3 images"),
        ("no_output", "--output_dir is required"),
        ("unknown_flag", "input_dri"),
    ],
)
def test_cli_bad_input_is_one_line(image_tree: Path, tmp_path: Path, case: str, message: str):
    flat = tmp_path / "val"
    for filename in ("a.jpg", "b.jpg", "c.jpg"):
        save_image(flat / filename, COLOURS["cat"])
    labels = tmp_path / "labels.txt"
    labels.write_text("cat\ndgo\ncat\n" if case == "unknown_class" else "cat\ndog\n")
    (tmp_path / "empty" / "cat").mkdir(parents=True)
    inputs = {"missing_input": tmp_path / "nowhere", "no_images": tmp_path / "empty"}
    args = [f"--input_dir={inputs.get(case, image_tree)}"]
    if case != "no_output":
        args.append(f"--output_dir={tmp_path / 'out'}")
    if case in ("unknown_class", "count_mismatch"):
        args += [f"--validation_dir={flat}", f"--validation_labels={labels}"]
    if case == "unknown_flag":
        args.append("--input_dri=x")
    result = run_cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(message, lines[0]), lines[0]
    assert not (tmp_path / "out").exists()


def assert_one_error_line(result: subprocess.CompletedProcess, message: str) -> None:
    """Exit code 2, exactly one stderr line `error: ...` matching message, no traceback."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(message, lines[0]), lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def _empty_class(root: Path) -> None:
    (root / "bird").mkdir()


def _class_without_images(root: Path) -> None:
    (root / "bird").mkdir()
    (root / "bird" / "readme.txt").write_text("no images here")


def _class_of_symlink_loops(root: Path) -> None:
    (root / "bird").mkdir()
    (root / "bird" / "loop").symlink_to("loop")
    (root / "bird" / "other").symlink_to("again")
    (root / "bird" / "again").symlink_to("other")


def _image_symlink_loop(root: Path) -> None:
    (root / "cat" / "looped.jpg").symlink_to("looped.jpg")


def _class_folder_symlink_loop(root: Path) -> None:
    (root / "bird").symlink_to("bird")


def _class_folder_link_to_root(root: Path) -> None:
    (root / "all").symlink_to(".")  # a loop through the tree: ROOT/all/all/...


def _single_images(root: Path) -> None:
    for name in CLASSES:
        for extra in sorted((root / name).iterdir())[1:]:
            extra.unlink()


HYGIENE = {
    "empty class folder": (_empty_class, r"class folder 'bird' has no .jpg/.jpeg/.png images"),
    "class folder without images": (
        _class_without_images,
        r"class folder 'bird' has no .jpg/.jpeg/.png images",
    ),
    "class folder of symlink loops": (
        _class_of_symlink_loops,
        r"class folder 'bird' has no .jpg/.jpeg/.png images",
    ),
    "image that is a symlink loop": (
        _image_symlink_loop,
        r"images/cat has broken symlinks or symlink loops: looped.jpg",
    ),
    "class folder that is a symlink loop": (
        _class_folder_symlink_loop,
        r"images has broken symlinks or symlink loops: bird",
    ),
    "class folder linking back to the root": (
        _class_folder_link_to_root,
        r"class folder 'all' has no .jpg/.jpeg/.png images",
    ),
    "nothing to hold out": (_single_images, "no class with 2 or more images to hold out"),
}


@pytest.mark.parametrize("case", sorted(HYGIENE))
def test_cli_refuses_folders_that_would_become_bad_classes(
    image_tree: Path, tmp_path: Path, case: str
) -> None:
    make, message = HYGIENE[case]
    make(image_tree)
    out = tmp_path / "out"
    assert_one_error_line(run_cli(f"--input_dir={image_tree}", f"--output_dir={out}"), message)
    assert not out.exists()


@pytest.mark.parametrize("inside", ["input", "validation", "input itself"])
def test_cli_refuses_output_dir_inside_the_images(
    image_tree: Path, tmp_path: Path, inside: str
) -> None:
    save_image(tmp_path / "val" / "fish" / "f.jpg", COLOURS["fish"])
    folder = {"input": image_tree, "validation": tmp_path / "val", "input itself": image_tree}
    out = folder[inside] if inside == "input itself" else folder[inside] / "tfrecords"
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = run_cli(
        f"--input_dir={image_tree}", f"--output_dir={out}", f"--validation_dir={tmp_path / 'val'}"
    )
    flag = "validation_dir" if inside == "validation" else "input_dir"
    assert_one_error_line(result, f"--output_dir {out} is inside --{flag} ")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
