"""Benchmark harness: time-to-accuracy across slices, throughput, reports, slice predictions."""

import models  # noqa: F401 - sets TensorFlow's environment before anything imports it
