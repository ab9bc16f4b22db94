"""Benchmark harness: time-to-accuracy across slices, throughput, reports, slice predictions."""
