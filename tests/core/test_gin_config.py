"""gin glue: bare recipe names, bindings that win, and one-line errors with the nearest name."""

import gin
import pytest

from models.core import gin_config
from models.core.errors import UsageError
from models.core.paths import OFFICIAL_DIR
from models.core.settings import TrainSettings


def test_bare_names_resolve_under_configs():
    assert gin_config.resolve_gin_file("slices/v3-32").endswith("configs/slices/v3-32.gin")
    assert gin_config.resolve_gin_file("default.gin", family="resnet").endswith(
        "configs/resnet/default.gin"
    )


def test_binding_overrides_file():
    gin_config.parse(["resnet/default.gin"], ["train.epochs = 3"])
    assert TrainSettings().epochs == 3


def test_slice_file_sets_the_batch_wherever_it_stands():
    for files in (["resnet/default.gin", "slices/cpu-4.gin"], ["slices/cpu-4", "resnet/default"]):
        gin.clear_config()
        gin_config.parse(files, [])
        assert TrainSettings().global_batch_size == 128


def test_slice_flag_applies_its_slice_file_and_bindings_still_win():
    gin_config.parse(["resnet/default.gin"], [], slice_name="cpu-4")
    assert TrainSettings().global_batch_size == 128
    gin.clear_config()
    gin_config.parse(["resnet/default.gin"], ["train.global_batch_size = 32"], slice_name="cpu-4")
    assert TrainSettings().global_batch_size == 32


def test_slice_file_of_another_slice_is_one_line():
    with pytest.raises(UsageError, match="is for v3-32, not for --slice=cpu-2"):
        gin_config.parse(["resnet/default.gin", "slices/v3-32.gin"], [], slice_name="cpu-2")


def test_a_recipe_that_includes_its_slice_file_keeps_its_own_batch():
    # MLPerf v0.5 ran v3-512 at 16384: the recipe includes slices/v3-512.gin, then sets that.
    recipe = str(OFFICIAL_DIR / "resnet50_v05_v3-512.gin")
    gin_config.parse([recipe], [], slice_name="v3-512")
    assert TrainSettings().global_batch_size == 16384


def test_moved_parameter_names_its_new_place():
    with pytest.raises(
        UsageError, match="'train.eval_every_epochs' .*is now evaluation.every_epochs"
    ):
        gin_config.parse([], ["train.eval_every_epochs = 2"])


def test_unknown_file_suggests_nearest():
    with pytest.raises(UsageError, match="did you mean 'slices/v3-32.gin'"):
        gin_config.parse(["slices/v3-23.gin"], [])


def test_unknown_parameter_names_nearest():
    with pytest.raises(UsageError, match="no parameter 'epoch'.*did you mean 'epochs'"):
        gin_config.parse([], ["train.epoch = 3"])


def test_unknown_configurable_names_nearest_and_location(tmp_path):
    recipe = tmp_path / "bad.gin"
    recipe.write_text("train.epochs = 2\ntrian.epochs = 3\n")
    with pytest.raises(UsageError) as error:
        gin_config.parse([str(recipe)], [])
    message = str(error.value)
    assert "'trian'" in message and "line 2" in message and "did you mean 'train'" in message
    assert "\n" not in message


def test_binding_that_does_not_parse_is_named():
    with pytest.raises(UsageError, match=r"bad gin binding 'train.epochs = \(': EOF"):
        gin_config.parse([], ["train.epochs = 2", "train.epochs = ("])
