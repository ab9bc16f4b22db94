"""The shared text pipeline: WordPiece vocabularies learned with tensorflow-text's learner, and
its in-graph BERT tokenizer checked against Google's reference tokenizer (Model Garden's copy
of BERT's tokenization.py)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import tensorflow as tf
from official.nlp.tools.tokenization import FullTokenizer
from zoo_testing import one_error_line, run_converter

from models.core.errors import UsageError
from models.data.convert.vocab import learn_vocab
from models.data.text import RESERVED_TOKENS, UNK, bert_tokenizer, read_vocab, write_vocab

# Sentences the corpus does not hold: accents, capitals, CJK, unseen characters and words, a
# word longer than WordPiece's limit, whitespace only.
HARD_SENTENCES = [
    "Naïve café-goers' JSON_Decoder returned 3.14159!",
    "Ünïcödé 中文 and emoji 🙂 in one line",
    "https://example.org/a?b=c&d=e",
    "x" * 150,
    "y" * 450,
    "   ",
    "",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Real English text: the docstrings of a few standard-library modules, a paragraph a line."""
    import argparse
    import difflib
    import json
    import textwrap

    lines = []
    for module in (json, textwrap, difflib, argparse):
        for _, member in inspect.getmembers(module):
            for paragraph in (inspect.getdoc(member) or "").split("\n\n"):
                lines.append(" ".join(paragraph.split()))
        lines.append("")
    path = tmp_path_factory.mktemp("corpus") / "docstrings.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def vocab_file(corpus, tmp_path_factory) -> str:
    vocab, lines, words = learn_vocab([str(corpus)], vocab_size=800)
    assert lines > 400 and words > 1000
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    write_vocab(vocab, path)
    return path


def _lines(corpus: Path, count: int) -> list[str]:
    return [line for line in corpus.read_text().splitlines() if line][:count]


def test_learned_vocabulary_covers_its_corpus_in_few_pieces(vocab_file, corpus):
    tokens = read_vocab(vocab_file)
    assert tokens[: len(RESERVED_TOKENS)] == list(RESERVED_TOKENS)
    assert 700 <= len(tokens) <= 900  # the learner lands near --vocab_size
    assert {"the", "string", "json", "##s"} <= set(tokens)
    lines = _lines(corpus, 10_000)
    ids = bert_tokenizer(vocab_file).tokenize(tf.constant(lines))
    assert tokens.index(UNK) not in ids.flat_values.numpy()  # every character has a token
    words = sum(len(line.split()) for line in lines)
    assert int(tf.size(ids.flat_values)) < 2.0 * words


@pytest.mark.parametrize("lower_case", [True, False])
def test_tokenizer_reproduces_the_reference_wordpiece(vocab_file, corpus, lower_case):
    reference = FullTokenizer(vocab_file, do_lower_case=lower_case)
    sentences = _lines(corpus, 60) + HARD_SENTENCES
    ours = bert_tokenizer(vocab_file, lower_case).tokenize(tf.constant(sentences)).to_list()
    for sentence, ids in zip(sentences, ours, strict=True):
        assert ids == reference.convert_tokens_to_ids(reference.tokenize(sentence)), sentence


def test_tokenizer_runs_inside_a_traced_function(vocab_file):
    tokenizer = bert_tokenizer(vocab_file)
    traced = tf.function(lambda texts: tokenizer.tokenize(texts).to_tensor())
    eager = tokenizer.tokenize(tf.constant(["the string", "json"])).to_tensor()
    assert traced(tf.constant(["the string", "json"])).numpy().tolist() == eager.numpy().tolist()


BAD_VOCABS = {
    "missing": (None, "is not a file"),
    "empty": ("\n\n", "is empty"),
    "repeated token": (
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nthe\n",
        "'the' twice (lines 6 and 7)",
    ),
    "blank line inside": ("[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n[MASK]\n", "line 3 is blank"),
    "no [MASK]": ("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n", "lacks BERT's special tokens [MASK]"),
}


@pytest.mark.parametrize("case", sorted(BAD_VOCABS))
def test_a_vocabulary_bert_cannot_use_is_one_usage_error(case, tmp_path):
    content, message = BAD_VOCABS[case]
    path = tmp_path / "vocab.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=re.escape(message)):
        bert_tokenizer(str(path))


def test_vocab_cli_writes_a_vocabulary_the_tokenizer_reads(corpus, tmp_path, cli_env):
    output = tmp_path / "vocab.txt"
    args = (f"--input={corpus}", f"--output={output}", "--vocab_size=300")
    result = run_converter("vocab", *args, env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"tokens to {output}" in result.stdout
    assert 250 <= len(read_vocab(str(output))) <= 350
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.txt"]  # no staging file left


@pytest.mark.parametrize(
    "case, message",
    [
        ("no file matches", "matches no file"),
        ("empty corpus", "has no words"),
        ("tiny vocabulary", "--vocab_size must be at least"),
        ("no such output folder", "does not exist"),
    ],
)
def test_vocab_cli_bad_input_is_one_line(case, message, tmp_path, cli_env):
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "text.txt").write_text("Some words to learn from.\n")
    output = tmp_path / "out" / "vocab.txt"
    args = {
        "no file matches": [f"--input={tmp_path}/nothing-*.txt"],
        "empty corpus": [f"--input={tmp_path / 'empty.txt'}"],
        "tiny vocabulary": [f"--input={tmp_path / 'text.txt'}", "--vocab_size=10"],
        "no such output folder": [f"--input={tmp_path / 'text.txt'}"],
    }[case]
    if case != "no such output folder":
        output.parent.mkdir()
    line = one_error_line(run_converter("vocab", *args, f"--output={output}", env=cli_env))
    assert message in line
    assert not output.exists()
