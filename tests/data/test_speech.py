"""The speech input: training batches bucketed by frames in static shapes (or one shape),
SpecAugment on training batches only (evaluation features are the unmasked ones; masks off,
training features equal them), evaluation batches that carry every clip once then padding
clips of unique_id -1, and pre-flight checks naming the recipe's settings."""

from __future__ import annotations

from pathlib import Path

import gin
import numpy as np
import pytest
import tensorflow as tf
from speech_testing import CLIPS, clip, write_librispeech

from models.core.errors import UsageError
from models.data.audio_features import NUM_BINS, features, num_frames
from models.data.audio_files import check_wav, wav_bytes
from models.data.convert.librispeech import convert
from models.data.speech import PAD_ID, SpeechInput, bucket_frames, read_clips, read_references
from models.data.speech_schema import normalise_text

MAX_FRAMES = 300  # 3 s: 298 frames, rounded up to a multiple of 4


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Train (all six clips) and validation (four of them) records."""
    root = tmp_path_factory.mktemp("speech")
    write_librispeech(root / "train")
    write_librispeech(root / "dev", CLIPS[2:])
    out = root / "records"
    convert([str(root / "train")], str(out), "train", num_shards=2)
    convert([str(root / "dev")], str(out), "validation")
    return out


@pytest.fixture(scope="module")
def unmasked(folder) -> dict[str, np.ndarray]:
    """Each train clip's features as evaluation batches hold them, by normalised transcript;
    they equal the features computed directly from the clip's audio."""
    data = SpeechInput(data_dir=str(folder))
    evaluation = data.reader("validation").read(data.files("train"), False, 6, None, None)
    batch = {name: value.numpy() for name, value in next(iter(evaluation)).items()}
    found = {}
    for row, unique_id in enumerate(batch["unique_id"]):  # ids in write order: CLIPS'
        *ids, seconds, text = CLIPS[unique_id]
        direct = features(tf.constant(clip(*ids, seconds).tobytes())).numpy()
        found[normalise_text(text)] = evaluated = batch["features"][row, : len(direct)]
        np.testing.assert_allclose(evaluated, direct, atol=2e-4)
    return found


def _text(data: SpeechInput, targets: np.ndarray) -> str:
    return data.detokenize([targets])[0]


def test_training_batches_fill_frame_buckets_of_static_shapes(folder):
    data = SpeechInput(data_dir=str(folder))
    data.validate()
    assert data.max_frames == MAX_FRAMES and data.bucket_frames == (200, MAX_FRAMES)
    assert data.max_target_length == 58 and data.vocab_size == 31 and data.eos_id == 1
    assert data.num_frames("train") == sum(
        num_frames(round(seconds * 16000)) for *_, seconds, _ in CLIPS
    )
    shapes = set()
    for batch in data.dataset("train", 2, seed=3).take(12):
        batch = {name: value.numpy() for name, value in batch.items()}
        size, length, bins = batch["features"].shape
        shapes.add((size, length))
        assert bins == NUM_BINS and size * length == 2 * MAX_FRAMES  # a budget of frames
        assert batch["targets"].shape == batch["target_mask"].shape == (size, 58)
        frames = batch["feature_mask"].sum(axis=1)
        assert np.all(frames <= length) and np.all(frames > (100 if length == 300 else 0))
        assert np.all(batch["features"][batch["feature_mask"] == 0] == 0.0)
        ends = batch["target_mask"].sum(axis=1) - 1
        assert np.all(batch["targets"][np.arange(size), ends] == 1)  # EOS-ended
    assert shapes == {(3, 200), (2, 300)}


def test_one_bucket_gives_one_static_shape(folder):
    data = SpeechInput(data_dir=str(folder), bucket_seconds=())
    spec = data.dataset("train", 2, seed=0).element_spec
    assert spec["features"].shape == (2, MAX_FRAMES, NUM_BINS)
    assert spec["feature_mask"].shape == (2, MAX_FRAMES) and spec["targets"].shape == (2, 58)


def test_evaluation_covers_every_clip_once_unmasked_then_padding(folder, unmasked):
    data = SpeechInput(data_dir=str(folder))
    dataset = data.dataset("validation", 3)
    spec = dataset.element_spec
    assert spec["features"].shape == (3, MAX_FRAMES, NUM_BINS) and spec["unique_id"].shape == (3,)
    batches = [{k: v.numpy() for k, v in batch.items()} for batch in dataset.take(3)]
    ids = np.concatenate([batch["unique_id"] for batch in batches])
    assert list(ids) == [0, 1, 2, 3, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID]
    utterances, references = data.evaluation_set("validation")
    assert utterances == ["19-198-0002", "26-495-0000", "26-495-0001", "26-495-0002"]
    for batch in batches:
        for row, unique_id in enumerate(batch["unique_id"]):
            text = _text(data, batch["targets"][row])
            frames = batch["feature_mask"][row].sum()
            if unique_id == PAD_ID:
                assert text == "" and frames == 0 and not batch["features"][row].any()
                continue
            assert text == normalise_text(references[unique_id])
            direct = unmasked[text]  # computed with the same ops: the same numbers
            np.testing.assert_allclose(batch["features"][row, :frames], direct, atol=2e-4)


def test_spec_augment_masks_training_features_only(folder, unmasked):
    data = SpeechInput(data_dir=str(folder))
    masked_bins = masked_frames = 0
    for batch in data.dataset("train", 2, seed=1).take(8):
        for row in range(batch["features"].shape[0]):
            frames = int(batch["feature_mask"][row].numpy().sum())
            masked = batch["features"][row, :frames].numpy()
            expected = unmasked[_text(data, batch["targets"][row].numpy())]
            zero = masked == 0
            assert np.array_equal(masked[~zero], expected[~zero])
            bins, rows = zero.all(axis=0), zero.all(axis=1)
            assert np.array_equal(zero, bins[None, :] | rows[:, None])  # whole bands
            masked_bins += bins.sum()
            masked_frames += rows.sum()
    assert masked_bins > 0 and masked_frames > 0


def test_training_without_masks_equals_evaluation_features(folder, unmasked):
    gin.bind_parameter("spec_augment.freq_masks", 0)
    gin.bind_parameter("spec_augment.time_masks", 0)
    data = SpeechInput(data_dir=str(folder))
    for batch in data.dataset("train", 2, seed=2).take(4):
        for row in range(batch["features"].shape[0]):
            frames = int(batch["feature_mask"][row].numpy().sum())
            expected = unmasked[_text(data, batch["targets"][row].numpy())]
            assert np.array_equal(batch["features"][row, :frames].numpy(), expected)


def test_buckets_and_pre_flight_checks_name_the_recipe_settings(folder):
    assert bucket_frames(None, 35.0, 3500) == (200, 400, 800, 1600, 3200, 3500)
    assert bucket_frames([1.0, 2.5], 3.0, 300) == (100, 248, 300)
    with pytest.raises(UsageError, match="speech_input.bucket_seconds"):
        bucket_frames([2.0, 1.0], 3.0, 300)
    with pytest.raises(UsageError, match=r"clip 19-198-0002 is 3.00 s .*speech_input.max_sec"):
        SpeechInput(data_dir=str(folder), max_seconds=2.5).validate()
    with pytest.raises(UsageError, match="speech_input.max_target_length = 58"):
        SpeechInput(data_dir=str(folder), max_target_length=20).validate()
    with pytest.raises(UsageError, match="has no wordpiece.vocab"):
        SpeechInput(data_dir=str(folder), targets="wordpieces").validate()
    with pytest.raises(UsageError, match="unknown split 'valid' .*'validation'.*holds train, val"):
        SpeechInput(data_dir=str(folder)).validate(["valid"])
    longer = SpeechInput(data_dir=str(folder), max_seconds=4.0)
    longer.validate()
    assert longer.max_frames == 400 and longer.bucket_frames == (200, 400)


def test_clips_read_back_as_written_in_reference_order_and_as_wav_files(folder):
    """What the export check serves: a split's clips in unique_id order (the order of its
    references), each the WAV file that --mode=predict and serving read."""
    files = SpeechInput(data_dir=str(folder)).files("validation")
    utterances, texts = read_references(files)
    clips = read_clips(files)
    assert texts == [text for *_, text in CLIPS[2:]]
    for samples, (speaker, chapter, utterance, seconds, _) in zip(clips, CLIPS[2:], strict=True):
        np.testing.assert_array_equal(samples, clip(speaker, chapter, utterance, seconds))
    wav = wav_bytes(clips[0])
    check_wav(wav, utterances[0], 3.0)
    decoded, rate = tf.audio.decode_wav(wav)
    assert rate == 16000
    np.testing.assert_array_equal(np.round(decoded[:, 0] * 32768), clips[0])
