"""File writes that readers never see half done, local or remote (gs://)."""

import tensorflow as tf


def write_atomically(path: str, text: str | bytes) -> None:
    """Writes `text` (or bytes) beside `path`, then renames it over `path`."""
    tmp = f"{path}.tmp"
    with tf.io.gfile.GFile(tmp, "wb" if isinstance(text, bytes) else "w") as handle:
        handle.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)
