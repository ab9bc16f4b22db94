"""The translation input: records tokenised in the graph, ended by the end-of-sequence id,
batched by a token budget (batch x max_length) in length buckets of static shapes (or one static
shape), padding masks, and evaluation batches that carry every pair once with the ids of its raw
sentences, which detokenise exactly and equal Model Garden's loader's."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from official.nlp.data.wmt_dataloader import WMTDataConfig, WMTDataLoader
from parallel_testing import PAIRS, write_parallel

from models.core.errors import UsageError
from models.data.convert.parallel_text import MODEL_FILE, Lengths, convert, learn_sentencepiece
from models.data.translation import PAD_ID, TranslationInput, default_buckets

MAX_LENGTH = 48


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Train and validation records of the hand-written pairs, sequences up to 48 tokens."""
    root = tmp_path_factory.mktemp("parallel")
    train = write_parallel(root)
    valid = write_parallel(root, "valid", PAIRS[:5])
    out = root / "records"
    lengths = Lengths(MAX_LENGTH)  # a BPE model: the unigram one of 13 pairs spells more letters
    convert(
        [str(train[0])],
        [str(train[1])],
        str(out),
        vocab_size=600,
        lengths=lengths,
        model_type="bpe",
    )
    convert([str(valid[0])], [str(valid[1])], str(out), "validation", lengths=lengths)
    return out


def test_default_buckets_double_up_to_max_length():
    assert default_buckets(48) == (16, 32, 48)
    assert default_buckets(128) == (16, 32, 64, 128)
    assert default_buckets(10) == (10,)


def test_training_batches_fill_buckets_of_static_shapes_with_tokens(folder):
    data = TranslationInput(data_dir=str(folder))
    data.validate()
    assert data.bucket_lengths == (16, 32, 48) and data.max_length == MAX_LENGTH
    tokens = 4 * MAX_LENGTH  # a batch of 4 holds the tokens of 4 pairs of max_length
    shapes = Counter()
    eos = data.eos_id
    for batch in data.dataset("train", 4, seed=3).take(60):
        batch = {name: value.numpy() for name, value in batch.items()}
        size, length = batch["inputs"].shape
        shapes[size, length] += 1
        assert length in data.bucket_lengths and size == tokens // length  # the token budget
        for name, mask in (("inputs", "input_mask"), ("targets", "target_mask")):
            ids = batch[name]
            assert ids.shape == batch[mask].shape == (size, length) and ids.dtype == np.int32
            assert (batch[mask] == (ids != 0)).all()
            ends = batch[mask].sum(axis=1) - 1  # every sequence ends with one end of sequence
            assert (ids[np.arange(size), ends] == eos).all() and (ids == eos).sum() == size
            assert (batch[mask][:, 0] == 1).all()
        longer = np.maximum(batch["input_mask"].sum(1), batch["target_mask"].sum(1))
        smaller = [b for b in data.bucket_lengths if b < length]
        assert (longer > (smaller[-1] if smaller else 0)).all()  # in the smallest bucket it fits
    assert set(shapes) == {(12, 16), (6, 32), (4, 48)}


def test_one_bucket_is_one_shape_known_before_running(folder):
    data = TranslationInput(data_dir=str(folder), bucket_lengths=())
    spec = data.dataset("train", 2).element_spec
    assert all(s.shape == (2, MAX_LENGTH) for s in spec.values())
    context = tf.distribute.InputContext(num_input_pipelines=1, num_replicas_in_sync=2)
    spec = data.dataset("train", 4, context).element_spec  # 2 a replica
    assert all(s.shape == (2, MAX_LENGTH) for s in spec.values())


def test_evaluation_batches_hold_every_pair_once_then_padding(folder):
    data = TranslationInput(data_dir=str(folder))
    dataset = data.dataset("validation", 4)
    assert dataset.element_spec["inputs"].shape == (4, MAX_LENGTH)
    assert dataset.element_spec["unique_id"].shape == (4,)
    batches = [{k: v.numpy() for k, v in b.items()} for b in dataset.take(3)]
    ids = np.concatenate([batch["unique_id"] for batch in batches])
    assert ids.tolist() == [0, 1, 2, 3, 4] + [PAD_ID] * 7
    padding = batches[-1]
    assert (padding["inputs"][1:] == 0).all() and (padding["input_mask"][1:] == 0).all()
    sources, references = data.evaluation_set("validation")
    assert list(zip(sources, references, strict=True)) == PAIRS[:5]
    targets = np.concatenate([batch["targets"] for batch in batches])[:5]
    assert data.detokenize(targets) == references  # exactly, from the ids

    # Model Garden's loader, reading the records as its translation task does, gives these ids
    config = WMTDataConfig(
        input_path=str(folder / "validation-*"),
        src_lang="en",
        tgt_lang="de",
        sentencepiece_model_path=str(folder / MODEL_FILE),
        is_training=False,
        static_batch=True,
        max_seq_length=MAX_LENGTH,
        has_unique_id=True,
        global_batch_size=1,
    )
    theirs = [{k: v.numpy() for k, v in b.items()} for b in WMTDataLoader(config).load().take(5)]
    for name in ("inputs", "targets"):
        ours = np.concatenate([batch[name] for batch in batches])[:5]
        np.testing.assert_array_equal(np.concatenate([b[name] for b in theirs]), ours)


def test_the_seq2seq_transformer_takes_the_batches(folder):
    from official.nlp.modeling import models

    data = TranslationInput(data_dir=str(folder))
    batch = next(iter(data.dataset("train", 4, seed=1)))
    encoder = models.TransformerEncoder(num_layers=1, num_attention_heads=2, intermediate_size=8)
    decoder = models.TransformerDecoder(num_layers=1, num_attention_heads=2, intermediate_size=8)
    model = models.Seq2SeqTransformer(
        vocab_size=data.vocab_size(),
        embedding_width=8,
        encoder_layer=encoder,
        decoder_layer=decoder,
        eos_id=data.eos_id,
    )
    logits = model(batch)  # the masks ride along; the model masks [PAD] (id 0) itself
    assert logits.shape == (*batch["targets"].shape, data.vocab_size())


def test_bad_settings_are_one_line(folder):
    with pytest.raises(UsageError, match="max_length = 48 but translation_input.max_length = 32"):
        TranslationInput(data_dir=str(folder), max_length=32).validate()
    with pytest.raises(UsageError, match="bucket_lengths \\[32, 16\\] must increase"):
        TranslationInput(data_dir=str(folder), bucket_lengths=(32, 16)).validate()
    with pytest.raises(UsageError, match="has no test files"):
        TranslationInput(data_dir=str(folder)).dataset("test", 4)
    with pytest.raises(UsageError, match="unknown split 'dev'"):
        TranslationInput(data_dir=str(folder)).files("dev")


def test_a_missing_or_other_model_is_one_line(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / MODEL_FILE).unlink()
    with pytest.raises(UsageError, match=f"has no {MODEL_FILE}: write the data with"):
        TranslationInput(data_dir=str(copy)).dataset("validation", 4)
    train = (str(folder.parent / "train.en"), str(folder.parent / "train.de"))
    (copy / MODEL_FILE).write_bytes(learn_sentencepiece([train], 500, "bpe"))
    with pytest.raises(UsageError, match="has 500 tokens.*says vocab_size = 600.*another model"):
        TranslationInput(data_dir=str(copy)).validate()
