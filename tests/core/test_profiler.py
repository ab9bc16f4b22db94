"""--profile_steps parsing: bad values are usage errors, not tracebacks."""

import pytest

from models.core.errors import UsageError
from models.core.profiler import Profiler


@pytest.mark.parametrize("bad", ["5", "a,b", "10,5", "-1,3"])
def test_bad_profile_steps(bad, tmp_path):
    with pytest.raises(UsageError, match="--profile_steps"):
        Profiler(bad, str(tmp_path))


def test_profile_covers_the_loops_between_start_and_end(tmp_path):
    profiler = Profiler("20,40", str(tmp_path / "profile"))
    profiler.at_step(10)
    assert not profiler.running
    profiler.at_step(22)
    assert profiler.running
    profiler.at_step(44)
    assert not profiler.running and any((tmp_path / "profile").rglob("*.xplane.pb"))
