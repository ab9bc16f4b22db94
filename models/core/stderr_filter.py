"""Keeps C libraries' own diagnostics off the terminal, so that a bad image met mid-run ends
in our one `error:` line rather than libjpeg's "Improper call to JPEG library in state 201"
above it, and TensorFlow's early C++ warnings do not clutter a run's progress lines. C code
writes to file descriptor 2 directly, so that descriptor is piped through a small child
process that drops those lines and passes everything else on. The child outlives a crash of
this process (it reads the pipe to its end), so no fatal message is ever lost; Python's own
sys.stderr keeps writing straight to the terminal."""

from __future__ import annotations

import os
import subprocess
import sys

# libjpeg's messages (jerror.h) that TensorFlow's decoders print before raising their own
# InvalidArgumentError, which our error boundary turns into the one line naming the record.
LIBJPEG_NOISE = (
    r"Improper call to JPEG library|Corrupt JPEG data|Premature end of JPEG file|"
    r"Invalid JPEG file structure|Not a JPEG file|Unsupported marker type|Bogus marker length|"
    r"Huffman table 0x[0-9a-f]+ was not defined|Quantization table 0x[0-9a-f]+ was not defined|"
    r"Bogus Huffman table definition|Bogus DQT index|Bogus DHT index|Empty JPEG image|"
    r"Unsupported JPEG process|Wrong JPEG library version|Maximum supported image dimension"
)
# TensorFlow's C++ warnings and info lines logged before absl::InitializeLog (absl's "W0000
# 00:00:..." form, e.g. grappler's "Error in PredictCost()" for CropAndResize), which ignore the
# TF_CPP_MIN_LOG_LEVEL=3 that models/__init__.py sets, and absl's own notice about them. Errors
# (E0000) and fatal lines (F0000) pass.
ABSL_EARLY_NOISE = (
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|"
    r"[WI]0000 00:00:"
)
# Grappler's notice that one of its graph rewrites (remapper, layout) failed and the graph runs
# unrewritten, e.g. the remapper on DCGAN's LeakyRelu gradients: an E0000 line about nothing
# the user can act on.
GRAPPLER_NOISE = r"E0000 00:00:[0-9.]+ +[0-9]+ meta_optimizer\.cc:[0-9]+\] [a-z_ ]+ failed: "
# CUDA's probe on a machine without a GPU driver, which TensorFlow logs as an error once per
# process (shown when a user's shell sets TF_CPP_MIN_LOG_LEVEL below 3): the run goes on on CPU.
CUDA_PROBE_NOISE = (
    r"(?:[0-9-]+ [0-9:.]+: E |E0000 00:00:[0-9.]+ +[0-9]+ )"
    r"\S*cuda_platform\.cc:[0-9]+\] failed call to cuInit: "
)
NOISE = f"{LIBJPEG_NOISE}|{ABSL_EARLY_NOISE}|{GRAPPLER_NOISE}|{CUDA_PROBE_NOISE}"
_ACTIVE = "ZOO_STDERR_FILTERED"  # set in the environment: children share the filtered pipe
_children: list[subprocess.Popen] = []  # held, so that no ResourceWarning fires while it reads

_CHILD = f"""
import re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
noise = re.compile(rb"^(?:{NOISE})")
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    if not noise.match(line):
        out.write(line)
        out.flush()
"""


def filter_c_stderr() -> None:
    """From now on, file descriptor 2 drops libjpeg's lines and TensorFlow's early C++ warnings;
    sys.stderr is unfiltered.
    Does nothing where descriptor 2 is closed or the filter is already in place."""
    if os.environ.get(_ACTIVE) or not _is_open(2):
        return
    terminal = os.dup(2)
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-S", "-c", _CHILD],
        stdin=read_end,
        stdout=terminal,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,  # a Ctrl-C or a signal to our process group leaves it reading
    )
    _children.append(child)
    os.close(read_end)
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    sys.stderr = os.fdopen(terminal, "w", buffering=1, encoding="utf-8", errors="replace")
    os.environ[_ACTIVE] = "1"


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
