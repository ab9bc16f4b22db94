"""What `make acceptance` checks of a trained run's export: the SavedModel that `--mode=export`
writes, served in a fresh process, answers the held-out split about as well as the run's own
evaluation did. Checked for the recipes whose export holds its own pre- and post-processing
(raw strings in, labels, answers or translations out), where the two paths can drift apart."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ExportCheck:
    """One measured property of an export and the least value it must have."""

    name: str
    value: float
    least: float

    @property
    def passed(self) -> bool:
        return self.value >= self.least  # False for NaN: a check that could not measure

    def __str__(self) -> str:
        return f"{self.name} {self.value:.3f} (at least {self.least:g})"


def export(recipe_path: str, model_dir: Path) -> str:
    """`python -m models.<family> --gin_file=<recipe>.gin --mode=export` of the run's latest
    checkpoint; the SavedModel's directory."""
    family = recipe_path.split("/")[0]
    command = [sys.executable, "-m", f"models.{family}", f"--model_dir={model_dir}"]
    command += [f"--gin_file={recipe_path}.gin", "--mode=export"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    found = re.search(r"exported SavedModel to (\S+)", done.stdout)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{' '.join(command[1:])} failed: {done.stderr.strip()[-500:]}")
    return found.group(1)


def serve_fresh(
    export_dir: str, inputs: dict[str, list[str] | list[bytes]], env: dict | None = None
) -> dict:
    """The SavedModel's `serving_default` answers to string `inputs` (text, or bytes such as
    WAV files), from a process that imports only TensorFlow and tensorflow-text (whose
    tokenizer ops exported text models use); the inputs go through stdin, base64-encoded
    (thousands of texts would pass the kernel's argument limit)."""
    script = f"""
import base64, json, sys, tensorflow as tf, tensorflow_text
serve = tf.saved_model.load({export_dir!r}).signatures["serving_default"]
given = json.load(sys.stdin).items()
out = serve(**{{k: tf.constant([base64.b64decode(x) for x in v]) for k, v in given}})
print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}, default=bytes.decode))
"""
    encoded = {
        name: [base64.b64encode(x if isinstance(x, bytes) else x.encode()).decode() for x in v]
        for name, v in inputs.items()
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(encoded),
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"serving {export_dir} failed: {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def glosses_accuracy(export_dir: str) -> ExportCheck:
    """Accuracy of the export on 2,000 raw dev definitions of the built-in WordNet glosses
    (a standard error of about 1.1 points; the recipe's target on all 8,324 is 0.5)."""
    from models.data import builtin

    dev = Path(builtin.prepare("wordnet_glosses"), "dev.tsv").read_text().splitlines()[1:2001]
    definitions, labels = zip(*(line.split("\t") for line in dev), strict=True)
    served = serve_fresh(export_dir, {"sentence": list(definitions)})["labels"]
    right = sum(ours == truth for ours, truth in zip(served, labels, strict=True))
    return ExportCheck("export accuracy on 2,000 dev glosses", right / len(labels), 0.45)


def squad_questions(dev: dict) -> tuple[list[str], list[str], list[str]]:
    """(ids, questions, contexts) of a SQuAD v1.1 JSON's every question, in file order."""
    rows = [
        (qa["id"], qa["question"], item["context"])
        for article in dev["data"]
        for item in article["paragraphs"]
        for qa in item["qas"]
    ]
    ids, questions, contexts = (list(column) for column in zip(*rows, strict=True))
    return ids, questions, contexts


def squad_f1(export_dir: str) -> ExportCheck:
    """SQuAD v1.1 F1 of the export's answers to the raw dev questions of the built-in
    wordnet_qa (the export reads a context's first window only, which holds most answers)."""
    from official.nlp.tools import squad_evaluate_v1_1

    from models.data import builtin

    dev = json.loads(Path(builtin.prepare("wordnet_qa"), "validation.json").read_text())
    ids, question, context = squad_questions(dev)
    answers = serve_fresh(export_dir, {"question": question, "context": context})["answer"]
    scores = squad_evaluate_v1_1.evaluate(dev["data"], dict(zip(ids, answers, strict=True)))
    return ExportCheck("export F1 on the dev questions", scores["final_f1"], 0.5)


def last_evaluation(model_dir: Path, split: str, suffix: str) -> Path:
    """The file that the run's last evaluation of split wrote during training
    (evaluations/<name>/<split>-<step><suffix>)."""
    written = model_dir.glob(f"evaluations/*/{split}-[0-9]*{suffix}")
    return max(written, key=lambda path: int(path.stem.split("-")[1]))


def translation_agreement(export_dir: str, model_dir: Path) -> ExportCheck:
    """Share of the test split's sentences that the export translates exactly as the run's
    last evaluation wrote them (evaluation batches and pads them otherwise: rare ties differ)."""
    from models.data.translation import TranslationInput

    translations = last_evaluation(model_dir, "test", ".de").read_text().splitlines()
    sources, _ = TranslationInput().evaluation_set("test")
    served = serve_fresh(export_dir, {"source": sources})["translation"]
    same = sum(ours == theirs for ours, theirs in zip(served, translations, strict=True))
    share = same / len(sources)
    return ExportCheck("export agreeing with the run's test translations", share, 0.95)


def transcript_agreement(export_dir: str, model_dir: Path) -> ExportCheck:
    """Share of the validation clips (voices training never heard) that the export, given
    them as WAV files, transcribes exactly as the run's last evaluation wrote them."""
    from models.data.audio_files import wav_bytes
    from models.data.speech import SpeechInput, read_clips

    written = last_evaluation(model_dir, "validation", ".txt").read_text().splitlines()
    transcripts = [line.partition(" ")[2] for line in written]  # `<utterance id> <words>`
    wavs = [wav_bytes(clip) for clip in read_clips(SpeechInput().files("validation"))]
    served = serve_fresh(export_dir, {"wav": wavs})["transcript"]
    same = sum(ours == theirs for ours, theirs in zip(served, transcripts, strict=True))
    name = "export agreeing with the run's validation transcripts"
    return ExportCheck(name, same / len(wavs), 0.95)


CHECKS: dict[str, Callable[[str, Path], ExportCheck]] = {
    "bert/glosses": lambda export_dir, _: glosses_accuracy(export_dir),
    "bert/squad": lambda export_dir, _: squad_f1(export_dir),
    "transformer/default": translation_agreement,
    "asr_transformer/default": transcript_agreement,
}


def check_export(recipe_path: str, model_dir: Path) -> ExportCheck:
    """The recipe's export check (CHECKS) on its trained run."""
    return CHECKS[recipe_path](export(recipe_path, model_dir), model_dir)
