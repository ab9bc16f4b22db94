"""File writes that readers never see half done, local or remote (gs://)."""

import tensorflow as tf


def write_atomically(path: str, text: str) -> None:
    """Writes `text` beside `path`, then renames it over `path`."""
    tmp = f"{path}.tmp"
    with tf.io.gfile.GFile(tmp, "w") as handle:
        handle.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)
