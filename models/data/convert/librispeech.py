"""Writes speech TFRecords (models.data.speech_schema) from folders in LibriSpeech's layout:
`<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac` (or .wav) beside
`<speaker>-<chapter>.trans.txt`, whose lines are `<utterance id> <TRANSCRIPT>`. Audio must be
16 kHz mono (LibriSpeech's); it is stored decoded, as int16 PCM, so the input graph only
computes features. Every transcript and audio header is checked before anything is written,
each clip is decoded into hidden staged shards that appear only when all are written, and the
split's counts merge into dataset_info.json (other splits' entries kept). With
--wordpiece_vocab_size, a WordPiece vocabulary is learned from this split's transcripts and
written beside the records (models.data.transcripts).

Usage: python -m models.data.convert.librispeech --input=DIR[,DIR...] --output=OUT
    --split=train [--num_shards=N] [--wordpiece_vocab_size=N]
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from absl import flags

from models.core.errors import UsageError, require_flags, run_app
from models.data.audio_features import num_frames
from models.data.audio_files import audio_samples, read_audio
from models.data.convert.text_output import check_split_absent, merge_info, staged_shards
from models.data.speech_schema import SAMPLE_RATE, SPLIT_NAME, encode, normalise_text
from models.data.transcripts import VOCAB_FILE, Wordpieces, learn_wordpieces, read_wordpieces

AUDIO_SUFFIXES = (".flac", ".wav")
TRANSCRIPT_SUFFIX = ".trans.txt"
READ_THREADS = 8  # clips decoded at once (libsndfile releases the GIL)
TOKENIZE_BATCH = 1024  # transcripts measured at once


@dataclass(frozen=True)
class Utterance:
    """A clip to write: its audio file, id, speaker (the folder above the chapter's) and
    transcript, with where that line is (for messages)."""

    audio: str
    utterance_id: str
    speaker: str
    transcript: str
    where: str


def _walk(root: str) -> Iterator[tuple[str, list[str]]]:
    """(folder, sorted file names) under root, folders in sorted order."""
    import tensorflow as tf

    for folder, _, names in sorted(tf.io.gfile.walk(root)):
        yield folder, sorted(names)


def _transcript_lines(path: str) -> Iterator[tuple[str, str, str]]:
    """(utterance id, transcript, 'path:line') of a .trans.txt file; UsageError for text
    that is not UTF-8 or an empty transcript."""
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            except UnicodeDecodeError:
                raise UsageError(f"{where} is not UTF-8 text") from None
            if not line:
                continue
            utterance, _, text = line.partition(" ")
            if not normalise_text(text):
                raise UsageError(
                    f"{where}: utterance {utterance} has an empty transcript (no letters); "
                    "every line must be '<utterance id> <TRANSCRIPT>'"
                )
            yield utterance, text.strip(), where


def folder_utterances(folder: str, names: list[str]) -> list[Utterance]:
    """The utterances of one chapter folder; UsageError for a transcript line without audio,
    audio without a transcript line, or an utterance listed twice."""
    audio = {
        os.path.splitext(name)[0]: os.path.join(folder, name)
        for name in names
        if name.lower().endswith(AUDIO_SUFFIXES)
    }
    speaker = os.path.basename(os.path.dirname(folder.rstrip("/")))
    found: dict[str, Utterance] = {}
    for name in (name for name in names if name.endswith(TRANSCRIPT_SUFFIX)):
        for utterance, text, where in _transcript_lines(os.path.join(folder, name)):
            if utterance not in audio:
                raise UsageError(
                    f"{where}: utterance {utterance} has no audio file "
                    f"({'/'.join(AUDIO_SUFFIXES)}) in {folder}"
                )
            if utterance in found:
                raise UsageError(f"{where}: utterance {utterance} is transcribed twice")
            found[utterance] = Utterance(audio[utterance], utterance, speaker, text, where)
    for utterance, path in audio.items():
        if utterance not in found:
            raise UsageError(
                f"{path} has no transcript: no line '{utterance} ...' in a *{TRANSCRIPT_SUFFIX} "
                "file beside it"
            )
    return list(found.values())


def find_utterances(inputs: Sequence[str]) -> list[Utterance]:
    """Every utterance under the input folders, in sorted folder order; UsageError for a
    missing folder, one without transcripts, or an utterance id found twice."""
    import tensorflow as tf

    utterances: list[Utterance] = []
    for root in inputs:
        if not tf.io.gfile.isdir(root):
            raise UsageError(f"--input {root} is not a folder")
        found = [u for folder, names in _walk(root) for u in folder_utterances(folder, names)]
        if not found:
            raise UsageError(
                f"--input {root} holds no <speaker>/<chapter>/*{TRANSCRIPT_SUFFIX} transcripts "
                "(LibriSpeech's layout)"
            )
        utterances += found
    seen: dict[str, str] = {}
    for utterance in utterances:
        if utterance.utterance_id in seen:
            raise UsageError(
                f"utterance {utterance.utterance_id} is in {seen[utterance.utterance_id]} "
                f"and {utterance.where}"
            )
        seen[utterance.utterance_id] = utterance.where
    return utterances


# ---------------------------------------------------------------- audio


# ---------------------------------------------------------------- measuring and writing


def target_lengths(texts: list[str], wordpieces: Wordpieces | None) -> dict[str, int]:
    """The longest transcript in characters and (with a vocabulary) WordPieces, one
    end-of-sequence token included."""
    lengths = {"characters": max(len(normalise_text(text)) for text in texts) + 1}
    if wordpieces is not None:
        import tensorflow as tf

        longest = 0
        for start in range(0, len(texts), TOKENIZE_BATCH):
            ids = wordpieces.tokenize(tf.constant(texts[start : start + TOKENIZE_BATCH]))
            longest = max(longest, int(tf.reduce_max(ids.row_lengths())))
        lengths["wordpieces"] = longest + 1
    return lengths


def split_vocabulary(
    output: str, texts: list[str], vocab_size: int | None
) -> tuple[list[str] | None, bool]:
    """(the folder's WordPiece vocabulary, whether it is learned now): learned from this
    split's texts with --wordpiece_vocab_size, else the folder's own, else None."""
    import tensorflow as tf

    path = os.path.join(output, VOCAB_FILE)
    exists = tf.io.gfile.exists(path)
    if vocab_size is not None and exists:
        raise UsageError(
            f"--output {output} already holds {VOCAB_FILE} (learned with its first split); "
            "leave out --wordpiece_vocab_size"
        )
    if vocab_size is not None:
        return learn_wordpieces(texts, vocab_size), True
    return (read_wordpieces(path) if exists else None), False


def header_samples(utterances: Sequence[Utterance], progress: bool = False) -> list[int]:
    """Every clip's sample count from its header, a few files at a time; the first bad
    file (in order) raises."""
    from tqdm import tqdm

    with ThreadPoolExecutor(READ_THREADS) as pool:
        counts = pool.map(audio_samples, [utterance.audio for utterance in utterances])
        total, off = len(utterances), not progress
        return list(tqdm(counts, "checking audio", total, disable=off, unit=" clips", delay=1))


def _decoded(utterances: Sequence[Utterance], counts: Sequence[int]) -> Iterator[np.ndarray]:
    """Each clip's samples in order, decoded a few at a time; UsageError when a clip does not
    decode to its header's length (cut short)."""
    with ThreadPoolExecutor(READ_THREADS) as pool:
        pairs = iter(zip(utterances, counts, strict=True))
        while chunk := list(itertools.islice(pairs, READ_THREADS * 4)):
            for (utterance, count), samples in zip(
                chunk, pool.map(lambda pair: read_audio(pair[0].audio), chunk), strict=True
            ):
                if len(samples) != count:
                    raise UsageError(
                        f"{utterance.audio} holds {len(samples)} samples but its header says "
                        f"{count}: it is cut short"
                    )
                yield samples


def write_shards(
    output: str, split: str, shards: int, utterances: list[Utterance], counts: list[int], bar
) -> None:
    """The split's records dealt round the shards (unique_id: write order), staged."""
    import tensorflow as tf

    with staged_shards(output, split, shards) as paths:
        writers = [tf.io.TFRecordWriter(path) for path in paths]
        try:
            for index, (utterance, samples) in enumerate(
                zip(utterances, _decoded(utterances, counts), strict=True)
            ):
                record = encode(
                    samples, utterance.transcript, utterance.utterance_id, utterance.speaker, index
                )
                writers[index % shards].write(record)
                bar.update()
        finally:
            for writer in writers:
                writer.close()


def split_statistics(
    inputs: Sequence[str], utterances: list[Utterance], counts: list[int], lengths: dict
) -> dict[str, Any]:
    """What dataset_info.json records of a split: clips, hours, frames, the longest clip."""
    samples = np.asarray(counts, np.int64)
    longest = int(np.argmax(samples))
    return {
        "examples": len(utterances),
        "seconds": round(float(samples.sum()) / SAMPLE_RATE, 3),
        "frames": int(num_frames(samples).sum()),
        "max_samples": int(samples[longest]),
        "max_seconds": float(samples[longest]) / SAMPLE_RATE,
        "longest_clip": utterances[longest].utterance_id,
        "speakers": len({utterance.speaker for utterance in utterances}),
        "target_lengths": lengths,
        "inputs": list(inputs),
    }


def merged_info(output: str, split: str, stats: dict[str, Any], vocab: list[str] | None) -> dict:
    """The split's dataset_info.json entries, with the folder-wide maxima and split list
    merged with the splits already there."""
    from models.data.imagenet_schema import INFO_FILE
    from models.data.records import read_info

    old = read_info(os.path.join(output, INFO_FILE))
    info = {
        "sample_rate": SAMPLE_RATE,
        f"num_{split}_examples": stats["examples"],
        f"{split}_seconds": stats["seconds"],
        f"{split}_statistics": stats,
        "max_samples": max(stats["max_samples"], old.get("max_samples", 0)),
        "max_seconds": max(stats["max_seconds"], old.get("max_seconds", 0.0)),
        "splits": sorted({*old.get("splits", []), split}),
    }
    if vocab is not None:
        info["wordpiece_vocab_size"] = len(vocab)
    return info


def check_arguments(inputs: Sequence[str], split: str, num_shards: int, vocab_size) -> None:
    """UsageError for a bad split name, shard count or vocabulary size, or no inputs."""
    if not inputs:
        raise UsageError("--input names no folder")
    if not SPLIT_NAME.fullmatch(split):
        raise UsageError(f"--split '{split}' must be lower case letters, digits and _ (train)")
    if num_shards < 1:
        raise UsageError(f"--num_shards must be at least 1, got {num_shards}")
    if vocab_size is not None and vocab_size < 1:
        raise UsageError(f"--wordpiece_vocab_size must be positive, got {vocab_size}")


def convert(
    inputs: list[str],
    output: str,
    split: str,
    num_shards: int = 1,
    wordpiece_vocab_size: int | None = None,
    progress: bool = False,
) -> dict:
    """Writes split's `<split>-NNNNN-of-MMMMM` shards of every utterance under the inputs
    (and a WordPiece vocabulary when asked), merges dataset_info.json; returns the split's
    statistics. Every check runs before a record is written; on failure nothing is left."""
    import tensorflow as tf
    from tqdm import tqdm

    check_arguments(inputs, split, num_shards, wordpiece_vocab_size)
    check_split_absent(output, split)
    utterances = find_utterances(inputs)
    counts = header_samples(utterances, progress)
    texts = [utterance.transcript for utterance in utterances]
    vocab, learned = split_vocabulary(output, texts, wordpiece_vocab_size)
    lengths = target_lengths(texts, Wordpieces(vocab) if vocab else None)
    created = not tf.io.gfile.exists(output)
    tf.io.gfile.makedirs(output)
    try:
        with tqdm(
            total=len(utterances), desc="writing", unit=" clips", disable=not progress, delay=1
        ) as bar:
            shards = min(num_shards, len(utterances))
            write_shards(output, split, shards, utterances, counts, bar)
    except BaseException:
        if created and not tf.io.gfile.listdir(output):
            tf.io.gfile.rmtree(output)
        raise
    if learned:
        from models.core.files import write_atomically

        write_atomically(os.path.join(output, VOCAB_FILE), "".join(f"{t}\n" for t in vocab))
    stats = split_statistics(inputs, utterances, counts, lengths)
    merge_info(output, merged_info(output, split, stats, vocab))
    return stats


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_list(
        "input",
        None,
        "Folders in LibriSpeech's layout (<speaker>/<chapter>/*.flac and *.trans.txt), "
        "comma-separated: e.g. LibriSpeech/train-clean-100,LibriSpeech/train-clean-360.",
    )
    flags.DEFINE_string("output", None, "Where the TFRecord shards and dataset_info.json go.")
    flags.DEFINE_string("split", "train", "Split written (train, validation, test, test_other...).")
    flags.DEFINE_integer("num_shards", 1, "Number of <split>-*-of-* TFRecord files.")
    flags.DEFINE_integer(
        "wordpiece_vocab_size",
        None,
        f"Learn a WordPiece vocabulary of about this many tokens from this split's transcripts "
        f"and write it as {VOCAB_FILE} (for speech_input.targets = 'wordpieces').",
    )


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "input", "output")
    start = time.monotonic()
    stats = convert(f.input, f.output, f.split, f.num_shards, f.wordpiece_vocab_size, progress=True)
    print(
        f"wrote {stats['examples']} {f.split} clips ({stats['seconds'] / 3600:.2f} hours, "
        f"{stats['speakers']} speakers, longest {stats['max_seconds']:.2f} s) to {f.output} "
        f"({time.monotonic() - start:.1f} s)"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
