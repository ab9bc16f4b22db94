"""`--mode=predict`: the restored model on a user's own input, so that a user can see what the
model does. Images: `--image=a.jpg --output=a.png`, the prediction drawn by the task into a PNG.
Text: `--input=file.txt [--output=out.txt]`, one prediction a line for each input line (a
translation), written to --output or printed. Speech: `--audio=a.wav [--output=a.txt]`, its
transcript. Generative models: `--num_images=64
--output=grid.png`, a grid of samples."""

from __future__ import annotations

import sys

import tensorflow as tf

from models.core.errors import UsageError, first_line
from models.core.files import write_atomically
from models.core.task import Models, Task


def check_paths(
    image: str | None,
    output: str | None,
    text: str | None = None,
    num_images: int | None = None,
    audio: str | None = None,
) -> None:
    """UsageError unless exactly one of --image / --input / --audio names a readable file, or
    --num_images asks a generative model for samples, and an image or samples have a PNG
    --output."""
    if sum(bool(x) for x in (image, text, num_images, audio)) > 1:
        raise UsageError(
            "--mode=predict takes one of --image (a picture), --input (text), --audio (speech) "
            "or --num_images (samples of a generative model)"
        )
    if audio:
        _check_file(audio, "--audio")
        return
    if num_images:
        if not output or not output.lower().endswith(".png"):
            raise UsageError("--mode=predict --num_images needs --output=FILE.png (the grid)")
        return
    if text:
        _check_file(text, "--input")
        return
    if not image or not output:
        raise UsageError(
            "--mode=predict needs --image=FILE.jpg and --output=FILE.png (or --input=FILE.txt, "
            "or --audio=FILE.wav)"
        )
    _check_file(image, "--image")
    if not output.lower().endswith(".png"):
        raise UsageError(f"--output={output}: the drawing is a PNG; name it <something>.png")


def _check_file(path: str, flag: str) -> None:
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise UsageError(f"{flag}={path}: no such file")


def predict_image(task: Task, models: Models, image: str, output: str) -> dict[str, str]:
    """Draws the task's prediction for the JPEG at `image` into the PNG `output`."""
    with tf.io.gfile.GFile(image, "rb") as f:
        image_bytes = f.read()
    if not image_bytes.startswith(b"\xff\xd8"):
        raise UsageError(f"--image={image}: not a JPEG (the exported model reads JPEG bytes)")
    try:
        drawing, summary = task.draw_prediction(models, image_bytes)
    except tf.errors.InvalidArgumentError as error:
        raise UsageError(f"--image={image}: cannot decode it: {first_line(error)}") from None
    write_atomically(output, tf.io.encode_png(drawing).numpy())
    return {"output": output, "prediction": summary}


def predict_text(task: Task, models: Models, text: str, output: str | None) -> dict[str, str]:
    """The task's prediction for each line of the UTF-8 file `text`, one a line, into `output`
    (written whole, atomically) or, without one, onto stdout."""
    try:
        with tf.io.gfile.GFile(text, "rb") as f:
            lines = input_lines(f.read().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise UsageError(f"--input={text}: not UTF-8 text ({error.reason})") from None
    predictions = task.predict_lines(models, lines)
    written = "".join(f"{line}\n" for line in predictions)
    if output:
        write_atomically(output, written)
    else:
        sys.stdout.write(written)
        sys.stdout.flush()
    return {"output": output or "stdout", "lines": str(len(predictions))}


def input_lines(text: str) -> list[str]:
    """The lines of a text file, split at "\n" alone (and "\r\n"): str.splitlines would also
    split at form feeds and U+2028, and the output would no longer match the input line by
    line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def predict_audio(task: Task, models: Models, audio: str, output: str | None) -> dict[str, str]:
    """The transcript of the WAV file `audio`, into `output` (a text file, written whole) or,
    without one, onto stdout."""
    with tf.io.gfile.GFile(audio, "rb") as f:
        transcript = task.transcribe_audio(models, f.read(), audio)
    if output:
        write_atomically(output, f"{transcript}\n")
    else:
        print(transcript, flush=True)
    return {"output": output or "stdout", "words": str(len(transcript.split()))}


def predict_samples(task: Task, models: Models, count: int, output: str) -> dict[str, str]:
    """A grid of `count` samples of a generative model into the PNG `output`."""
    grid, summary = task.draw_samples(models, count)
    write_atomically(output, tf.io.encode_png(grid).numpy())
    return {"output": output, "prediction": summary}
