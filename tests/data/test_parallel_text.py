"""Translation records from parallel text: written by the converter with a shared SentencePiece
model (given or learned from both sides) that gives the text back exactly, read back and
tokenised by Model Garden's WMT data loader; every kind of bad input is one line and exit code
2, with nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf
from official.nlp.data.wmt_dataloader import WMTDataConfig, WMTDataLoader
from parallel_testing import PAIRS, write_parallel
from zoo_testing import one_error_line, run_converter

from models.core.errors import UsageError
from models.data.convert.parallel_text import (
    EOS_ID,
    MODEL_FILE,
    PAD_ID,
    UNK_ID,
    Lengths,
    check_sentencepiece,
    convert,
    learn_sentencepiece,
    pair_languages,
    sentencepiece_tokenizer,
)
from models.data.translation import detokenize

VOCAB_SIZE = 400  # the hand-written pairs' unigram model holds 400 (259 special and byte tokens)


@pytest.fixture
def text(tmp_path) -> tuple[Path, Path]:
    return write_parallel(tmp_path)


def _records(folder: Path, split: str) -> list[dict]:
    found = []
    for path in sorted(folder.glob(f"{split}-*")):
        for record in tf.data.TFRecordDataset(str(path)):
            features = tf.train.Example.FromString(record.numpy()).features.feature
            found.append(
                {
                    "en": features["en"].bytes_list.value[0].decode(),
                    "de": features["de"].bytes_list.value[0].decode(),
                    "unique_id": features["unique_id"].int64_list.value[0],
                }
            )
    return sorted(found, key=lambda record: record["unique_id"])


def test_round_trip_with_a_learned_shared_sentencepiece_model(text, tmp_path):
    out = tmp_path / "out"
    info = convert([str(text[0])], [str(text[1])], str(out), vocab_size=VOCAB_SIZE, num_shards=2)
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        MODEL_FILE,
        "train-00000-of-00002",
        "train-00001-of-00002",
    ]
    assert json.loads((out / "dataset_info.json").read_text()) == info
    records = _records(out, "train")
    assert [(r["en"], r["de"]) for r in records] == PAIRS  # raw text, in file order by id
    assert [r["unique_id"] for r in records] == list(range(len(PAIRS)))
    model = (out / MODEL_FILE).read_bytes()
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    # Model Garden's ids: <pad> 0, </s> 1, <unk> 2, no <s>; then the byte tokens
    assert (processor.pad_id(), processor.eos_id(), processor.unk_id()) == (0, 1, 2)
    assert (PAD_ID, EOS_ID, UNK_ID) == (0, 1, 2) and processor.bos_id() == -1
    assert processor.id_to_piece(3) == "<0x00>" and processor.is_byte(258)
    assert info["vocab_size"] == processor.get_piece_size() == VOCAB_SIZE
    assert (info["eos_id"], info["pad_id"]) == (1, 0)
    assert (info["source_language"], info["target_language"]) == ("en", "de")
    pieces = {processor.id_to_piece(i) for i in range(VOCAB_SIZE)}
    assert "▁server" in pieces and "▁nicht" in pieces  # one model for both sides
    tokenizer = sentencepiece_tokenizer(model)
    for side, language in enumerate(("source", "target")):
        texts = [pair[side] for pair in PAIRS]
        ids = tokenizer.tokenize(tf.constant(texts))
        lengths = ids.row_lengths().numpy() + 1  # and the end-of-sequence token
        stats = info["train_statistics"][language]
        assert stats["tokens"] == lengths.sum() and stats["max"] == lengths.max()
        assert stats["unknown_fraction"] == 0.0 and stats["exact_round_trip"] == 1.0
        # the text comes back exactly from its ids, end of sequence and padding dropped
        padded = ids.to_tensor(default_value=0, shape=[len(texts), 100]).numpy()
        padded[np.arange(len(texts)), lengths - 1] = EOS_ID
        padded[:, -1] = 7  # after the end of sequence: ignored
        assert detokenize(padded, tokenizer, EOS_ID) == texts
    assert info["train_statistics"]["dropped_long"] == 0


def test_text_the_model_never_saw_comes_back_exactly(text, tmp_path):
    model = learn_sentencepiece([(str(text[0]), str(text[1]))], VOCAB_SIZE)
    assert learn_sentencepiece([(str(text[0]), str(text[1]))], VOCAB_SIZE) == model  # determined
    tokenizer = sentencepiece_tokenizer(model)
    texts = ["Größe:  „%s“ … ½ 東京 naïve\u00a0x\tz ﬁ", "ÄÖÜ ẞ €", "<unk> </s> <pad>"]
    ids = tokenizer.tokenize(tf.constant(texts))
    assert UNK_ID not in ids.flat_values.numpy()  # byte tokens spell what the model lacks
    assert detokenize(ids.to_list(), tokenizer, EOS_ID) == texts  # no NFKC, spaces kept
    bpe = learn_sentencepiece([(str(text[0]), str(text[1]))], 600, "bpe")
    assert check_sentencepiece(bpe, "bpe").vocab_size == 600 and bpe != model


def test_two_conversions_write_the_same_bytes(text, tmp_path):
    written = []
    for name in ("a", "b"):
        convert([str(text[0])], [str(text[1])], str(tmp_path / name), vocab_size=VOCAB_SIZE)
        written.append({p.name: p.read_bytes() for p in (tmp_path / name).iterdir()})
    assert written[0] == written[1] and MODEL_FILE in written[0]


def test_model_gardens_wmt_loader_reads_and_tokenizes_the_records(text, tmp_path):
    out = tmp_path / "out"
    convert([str(text[0])], [str(text[1])], str(out), vocab_size=VOCAB_SIZE)
    config = WMTDataConfig(
        input_path=str(out / "train-*"),
        src_lang="en",
        tgt_lang="de",
        transform_and_batch=False,
        is_training=False,
        has_unique_id=True,
        global_batch_size=1,
    )
    first = next(iter(WMTDataLoader(config).load()))
    assert (first["en"].numpy().decode(), first["de"].numpy().decode()) == PAIRS[0]
    assert first["unique_id"].numpy() == 0
    # and tokenises them with the folder's model, as its translation task does
    config = config.replace(
        transform_and_batch=True,
        sentencepiece_model_path=str(out / MODEL_FILE),
        static_batch=True,
        max_seq_length=128,
    )
    batch = next(iter(WMTDataLoader(config).load()))
    tokenizer = sentencepiece_tokenizer((out / MODEL_FILE).read_bytes())
    expected = tokenizer.tokenize(PAIRS[0][1]).numpy().tolist() + [EOS_ID]
    assert batch["targets"].numpy()[0, : len(expected)].tolist() == expected
    assert not batch["targets"].numpy()[0, len(expected) :].any()


def test_later_splits_share_the_folders_model(text, tmp_path):
    out = tmp_path / "out"
    convert([str(text[0])], [str(text[1])], str(out), vocab_size=VOCAB_SIZE)
    valid = write_parallel(tmp_path, "valid", PAIRS[:3])
    info = convert([str(valid[0])], [str(valid[1])], str(out), "validation")  # no model given
    assert info["num_validation_examples"] == 3 and info["num_train_examples"] == len(PAIRS)
    assert info["validation_statistics"]["target"]["exact_round_trip"] == 1.0
    with pytest.raises(UsageError, match="already holds validation shards"):
        convert([str(valid[0])], [str(valid[1])], str(out), "validation")
    with pytest.raises(UsageError, match="max_length 128, not 64"):
        convert([str(valid[0])], [str(valid[1])], str(out), "test", lengths=Lengths(64))
    with pytest.raises(UsageError, match="another SentencePiece model"):
        convert([str(valid[0])], [str(valid[1])], str(out), "test", vocab_size=VOCAB_SIZE - 1)
    info = convert(
        [str(valid[0])],
        [str(valid[1])],
        str(out),
        "test",
        sentencepiece_model=str(out / MODEL_FILE),
    )
    assert info["num_test_examples"] == 3


def test_models_that_do_not_pad_with_zero_or_are_no_models_are_refused(text, tmp_path):
    sentences = [side for pair in PAIRS for side in pair]
    for ids, message in (
        ({"pad_id": -1, "eos_id": 2, "unk_id": 0, "bos_id": 1}, "has pad id -1"),
        ({"pad_id": 0, "eos_id": -1, "unk_id": 1, "bos_id": -1}, "end-of-sequence id -1"),
    ):
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=model,
            vocab_size=100,
            minloglevel=2,
            hard_vocab_limit=False,
            **ids,
        )
        with pytest.raises(UsageError, match=message):
            check_sentencepiece(model.getvalue(), "x.model")
    with pytest.raises(UsageError, match="x.model is not a SentencePiece model"):
        check_sentencepiece(b"garbage", "x.model")


def test_long_pairs_are_an_error_or_dropped_and_counted(text, tmp_path):
    out = tmp_path / "out"
    lengths = Lengths(50)
    with pytest.raises(UsageError) as error:
        convert([str(text[0])], [str(text[1])], str(out), vocab_size=VOCAB_SIZE, lengths=lengths)
    message = str(error.value)
    assert f"{text[0]}:9 is 86 tokens long" in message and "over --max_length 50" in message
    assert "--long=drop" in message
    assert not list(out.glob("train-*"))
    info = convert(
        [str(text[0])], [str(text[1])], str(out), vocab_size=VOCAB_SIZE, lengths=Lengths(50, "drop")
    )
    assert info["num_train_examples"] == len(PAIRS) - 1
    assert info["train_statistics"]["dropped_long"] == 1
    assert info["train_statistics"]["target"]["max"] <= 50
    assert [r["unique_id"] for r in _records(out, "train")] == list(range(len(PAIRS) - 1))


def test_text_that_is_not_utf8_names_its_line(text, tmp_path):
    text[1].write_bytes("\ufeffHallo Welt.\n".encode() + b"Gr\xfc\xdfe\n")
    with pytest.raises(UsageError, match=f"{text[1]}:2 is not UTF-8 text"):
        convert([str(text[0])], [str(text[1])], str(tmp_path / "out"), vocab_size=VOCAB_SIZE)


def test_languages_come_from_the_flags_or_the_files_suffixes():
    assert pair_languages(["a/train.en"], ["a/train.de"], None, None) == ("en", "de")
    assert pair_languages(["x.txt"], ["y.txt"], "en", "pt-BR") == ("en", "pt-BR")
    with pytest.raises(UsageError, match="--source_language is not set"):
        pair_languages(["x.txt"], ["y.de"], None, None)
    with pytest.raises(UsageError, match="are both 'en'"):
        pair_languages(["x.en"], ["y.en"], None, None)
    with pytest.raises(UsageError, match="is not a language code"):
        pair_languages(["x.en"], ["y.de"], None, "unique_id")


BAD_INPUT = {
    "unequal line counts": (
        ["--source={d}/train.en", "--target={d}/short.de", "--vocab_size=400"],
        "has 13 lines but --target {d}/short.de has 12",
    ),
    "empty line": (
        ["--source={d}/train.en", "--target={d}/gap.de", "--vocab_size=400"],
        "{d}/gap.de:4 is empty",
    ),
    "no model": (
        ["--source={d}/train.en", "--target={d}/train.de"],
        "--sentencepiece_model (a SentencePiece model) or --vocab_size",
    ),
    "missing model": (
        ["--source={d}/train.en", "--target={d}/train.de", "--sentencepiece_model={d}/none.model"],
        "SentencePiece model {d}/none.model is not a file",
    ),
    "not a model": (
        ["--source={d}/train.en", "--target={d}/train.de", "--sentencepiece_model={d}/train.de"],
        "{d}/train.de is not a SentencePiece model",
    ),
    "vocabulary too small for the characters": (
        ["--source={d}/train.en", "--target={d}/train.de", "--vocab_size=300"],
        "--vocab_size 300 is too small for the characters of --source and --target: "
        "SentencePiece needs at least 310",
    ),
    "sequence past the maximum length": (
        ["--source={d}/train.en", "--target={d}/train.de", "--vocab_size=400", "--max_length=50"],
        "{d}/train.en:9 is 86 tokens long with the end-of-sequence token",
    ),
    "non-UTF-8 text": (
        ["--source={d}/train.en", "--target={d}/latin1.de", "--vocab_size=400"],
        "{d}/latin1.de:3 is not UTF-8 text",
    ),
    "same language on both sides": (
        [
            "--source={d}/train.en",
            "--target={d}/train.de",
            "--vocab_size=400",
            "--target_language=en",
        ],
        "--source_language and --target_language are both 'en'",
    ),
    "existing shards": (
        ["--source={d}/train.en", "--target={d}/train.de", "--vocab_size=400"],
        "already holds train shards",
    ),
}


@pytest.mark.slow
def test_cli_writes_records_and_bad_input_is_one_line(text, tmp_path, cli_env):
    d = tmp_path
    lines = text[1].read_text().splitlines()
    (d / "short.de").write_text("\n".join(lines[:-1]) + "\n")
    (d / "gap.de").write_text("\n".join([*lines[:3], " ", *lines[4:]]) + "\n")
    (d / "latin1.de").write_bytes("\n".join(lines).encode("latin-1"))
    args = [f"--source={text[0]}", f"--target={text[1]}", "--vocab_size=400"]
    result = run_converter("parallel_text", *args, f"--output_dir={d / 'out'}", env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"wrote {len(PAIRS)} train pairs (en-de;" in result.stdout
    for case, (flags, message) in BAD_INPUT.items():
        out = d / ("out" if case == "existing shards" else "x")
        bad = [flag.format(d=d) for flag in flags]
        line = one_error_line(
            run_converter("parallel_text", *bad, f"--output_dir={out}", env=cli_env)
        )
        assert message.format(d=d) in line, case
        assert not list((d / "x").glob("train-*")), case
