"""`--mode=predict --image=a.jpg --output=a.png`: the restored model's prediction on one image,
drawn by the task and written as a PNG, so that a user can look at what the model sees."""

from __future__ import annotations

import tensorflow as tf

from models.core.errors import UsageError, first_line
from models.core.files import write_atomically
from models.core.task import Models, Task


def check_paths(image: str | None, output: str | None) -> None:
    """UsageError unless --image names a readable file and --output is given."""
    if not image or not output:
        raise UsageError("--mode=predict needs --image=FILE.jpg and --output=FILE.png")
    if not tf.io.gfile.exists(image) or tf.io.gfile.isdir(image):
        raise UsageError(f"--image={image}: no such file")
    if not output.lower().endswith(".png"):
        raise UsageError(f"--output={output}: the drawing is a PNG; name it <something>.png")


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
