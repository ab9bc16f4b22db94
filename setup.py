"""Cloud TPU Pod reference-model zoo: package metadata and pinned dependencies."""

from setuptools import find_packages, setup

INSTALL_REQUIRES = [
    "tensorflow==2.20.*",
    "tf-keras==2.20.*",
    "tf-models-official==2.20.*",
    "tensorflow-text==2.20.*",
    "gin-config>=0.5.0",
    "absl-py>=2.1",
    "mlperf-logging>=4.1",
    "scikit-learn>=1.3",
    "matplotlib>=3.8",
    "Pillow>=10",
    "tqdm>=4.60",
    "sentencepiece>=0.1.99",  # translation: learns the shared subword model
    "sacrebleu>=2.3",  # translation: BLEU of detokenised text
    "soundfile>=0.12",  # speech: reads LibriSpeech's FLAC (its wheels bundle libsndfile)
    "jiwer>=3.0",  # speech: word error rate
    "scipy>=1.10",  # the built-in speech: resampling espeak-ng's 22,050 Hz output
]

# The recipes stay at the repository root (configs/, official/: data, not Python). A wheel or a
# non-editable install carries them as package data of `models`, under models/_data/, where
# models.core.paths finds them; `official` must never become a top-level name (Model Garden's).
DATA_DIRS = {"models._data.configs": "configs", "models._data.official": "official"}
PACKAGE_DATA = {
    "models._data.configs": ["*.gin", "**/*.gin"],
    "models._data.official": ["*.gin", "README.md"],
}

setup(
    name="tpu-pod-zoo",
    version="0.1.0",
    description="TensorFlow reference models tuned for Cloud TPU Pods, on one TF2 spine.",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["models", "models.*", "benchmarks", "benchmarks.*"])
    + list(DATA_DIRS),
    package_dir=DATA_DIRS,
    package_data=PACKAGE_DATA,
    install_requires=INSTALL_REQUIRES,
    # pytest 9.2 ignores the node ids that pytest-xdist 3.8's --dist loadgroup rewrites, so
    # xdist_group stops grouping, silently (pytest-dev/pytest-xdist#1386; tests/test_scheduling.py).
    extras_require={
        "test": ["pytest>=8,<9.2", "pytest-xdist>=3.5", "ruff>=0.5", "import-linter>=2.1"]
    },
    entry_points={"console_scripts": ["zoo-models=models.__main__:run"]},
)
