"""What an evaluation writes for people to read: every output file names a step, is never
overwritten, and pairs with the reference it was scored against, also when the same split of
other data (another --data_dir) is evaluated into the same folder."""

from __future__ import annotations

from models.core.task import EvalRun


def test_outputs_are_never_overwritten_and_pair_with_their_reference(tmp_path):
    first = EvalRun(step=5, directory=str(tmp_path)).write_scored("test", ".txt", "a\n", "r\n")
    again = EvalRun(step=5, directory=str(tmp_path), mode="eval")
    second = again.write_scored("test", ".txt", "b\n", "r\n")
    other = EvalRun(step=5, directory=str(tmp_path), mode="eval")
    third = other.write_scored("test", ".txt", "c\n", "other data\n")

    assert [first, second, third] == [
        f"{tmp_path}/test-5.txt",
        f"{tmp_path}/test-5-eval.txt",
        f"{tmp_path}/test-5-eval-2.txt",
    ]
    assert [(tmp_path / name).read_text() for name in ("test-5.txt", "test-5-eval-2.txt")] == [
        "a\n",
        "c\n",
    ]
    assert (tmp_path / "test-reference.txt").read_text() == "r\n"  # the first two's
    assert (tmp_path / "test-5-eval-2-reference.txt").read_text() == "other data\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "test-5-eval-2-reference.txt",
        "test-5-eval-2.txt",
        "test-5-eval.txt",
        "test-5.txt",
        "test-reference.txt",
    ]


def test_a_non_chief_worker_writes_nothing():
    assert EvalRun(step=1, directory=None).write_scored("test", ".txt", "a", "r") is None
