"""FID and Inception Score: the numbers the GAN targets are set in."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

from models.tasks import sample_quality


def _direct_fid(a: np.ndarray, b: np.ndarray) -> float:
    """FID by another route: Tr((S_a S_b)^(1/2)) as the sum of square roots of the eigenvalues
    of S_a^(1/2) S_b S_a^(1/2) (symmetric, so real and non-negative)."""
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root_a = linalg.sqrtm(cov_a).real
    eigenvalues = np.linalg.eigvalsh(root_a @ cov_b @ root_a)
    cross = np.sum(np.sqrt(np.clip(eigenvalues, 0.0, None)))
    mean = np.sum((a.mean(0) - b.mean(0)) ** 2)
    return float(mean + np.trace(cov_a) + np.trace(cov_b) - 2.0 * cross)


@pytest.mark.parametrize("shift", [0.0, 0.5, 3.0])
def test_frechet_distance_agrees_with_a_direct_numpy_scipy_computation(shift):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(500, 16)) @ rng.normal(size=(16, 16))
    b = rng.normal(size=(400, 16)) * 1.5 + shift
    assert sample_quality.frechet_distance(a, b) == pytest.approx(_direct_fid(a, b), rel=1e-6)


def test_frechet_distance_of_a_set_with_itself_is_zero_and_a_shift_adds_its_square():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(300, 8))
    assert sample_quality.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    assert sample_quality.frechet_distance(a, a + 2.0) == pytest.approx(8 * 4.0, rel=1e-6)


def test_inception_score_is_one_for_uniform_and_the_classes_for_confident_diverse_predictions():
    assert sample_quality.inception_score(np.full((50, 10), 0.1)) == pytest.approx(1.0)
    confident = np.eye(10)[np.arange(100) % 10]
    assert sample_quality.inception_score(confident) == pytest.approx(10.0, rel=1e-6)
    one_class = np.eye(10)[np.zeros(100, int)]
    assert sample_quality.inception_score(one_class) == pytest.approx(1.0, rel=1e-6)


def test_a_missing_inception_weights_file_is_one_line(tmp_path):
    from models.core.errors import UsageError

    with pytest.raises(UsageError, match="no such file"):
        sample_quality.inception_network(str(tmp_path / "inception_v3.h5"))
