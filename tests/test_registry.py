"""timm-style registry: creation, fixed and per-variant builder arguments, metadata (input
sizes, task, recipes), the parameter-count rule and the --list command."""

import subprocess

import gin
import pytest
from zoo_testing import PYTHON, one_error_line

import models
from models import __main__ as models_main
from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.core.registry import PublishedCount

registry.load_all()
RECIPES = sorted(registry._recipe_models())  # noqa: SLF001 - the scan under test


def test_every_family_registers_its_variants():
    assert {f"resnet{d}" for d in (10, 18, 34, 50, 101, 152, 200)} <= set(models.list_models())
    assert models.list_models("efficientnet") == [f"efficientnet_b{i}" for i in range(8)]
    assert models.list_models("mnasnet") == ["mnasnet_a1", "mnasnet_b1"]
    assert models.list_models("amoebanet") == ["amoebanet_d", "amoebanet_d_small"]
    sizes = ("base", "large", "medium", "mini", "small", "tiny")
    assert models.list_models("bert") == [f"bert_{size}" for size in sizes]
    assert models.list_models(pattern="*_v3*") == [
        "inception_v3",
        "inception_v3_small",
        "mobilenet_v3_large",
        "mobilenet_v3_small",
    ]


def test_overrides_reach_the_builder():
    model = models.create_model("resnet18", num_classes=7, image_size=32, width_multiplier=0.25)
    assert model.output_shape == (None, 7)


def test_unknown_model_suggests_nearest():
    with pytest.raises(UsageError, match="resnet50"):
        models.create_model("resnet05")


def test_fixed_arguments_cannot_change():
    gin.parse_config("resnet.depth = 101")
    with pytest.raises(UsageError, match=r"resnet50 fixes depth = 50; use the variant resnet101"):
        models.create_model("resnet50")
    with pytest.raises(UsageError, match=r"no variant has version = 'v2' \(inception_v3, "):
        models.create_model("inception_v3", version="v2")
    gin.clear_config()
    gin.parse_config("resnet.depth = 50")  # the variant's own value is harmless
    assert registry.model_entry("resnet50").arguments({}) == {"depth": 50}


def test_gin_and_the_caller_override_per_variant_defaults():
    entry = registry.model_entry("efficientnet_b3")
    assert entry.arguments({}) == {"variant": "b3", "image_size": 300, "dropout_rate": 0.3}
    gin.parse_config("efficientnet.dropout_rate = 0.1")
    assert entry.arguments({}) == {"variant": "b3", "image_size": 300}  # gin's 0.1 applies
    model = models.create_model("efficientnet_b0", num_classes=10, image_size=32)
    assert model.get_config()["dropout_rate"] == 0.1
    assert entry.arguments({"image_size": 64}) == {"variant": "b3", "image_size": 64}


def test_fixed_argument_in_a_recipe_is_one_line_from_the_cli(cli_env, tmp_path):
    command = [PYTHON, "-m", "models.resnet", f"--model_dir={tmp_path}", "--mode=train"]
    result = subprocess.run(
        [*command, "--gin_param=resnet.depth = 34"], capture_output=True, text=True, env=cli_env
    )
    assert one_error_line(result) == (  # after a first use's "building ..." notice, if any
        "error: resnet.depth = 34: resnet18 fixes depth = 18; use the variant resnet34 "
        '(run.model = "resnet34")'
    )


def test_metadata_input_sizes_and_task():
    assert registry.model_entry("efficientnet_b3").image_size == 300  # the variant's default
    assert registry.model_entry("inception_v3").image_size == 299  # the builder's default
    assert registry.model_entry("inception_v4").min_image_size == 75
    amoebanet = registry.model_entry("amoebanet_d")
    assert amoebanet.task == "AmoebaNetTask"
    assert amoebanet.task_class().__name__ == "AmoebaNetTask"
    assert registry.model_entry("resnet50").task_class().__name__ == "ImageClassificationTask"
    assert registry.model_entry("bert_base").image_size is None  # takes text
    assert registry.model_entry("bert_base").task_class().__name__ == "MaskedLMTask"


def test_recipes_fit_only_the_variant_they_train():
    resnet50 = registry.model_entry("resnet50")
    assert resnet50.recipes == ["resnet/resnet50_imagenet", "resnet/resnet50_imagenet_lars"]
    assert resnet50.default_recipe == "resnet/resnet50_imagenet"  # no default.gin of its own
    assert registry.model_entry("resnet18").default_recipe == "resnet/default"
    assert registry.model_entry("mnasnet_b1").recipes == ["mnasnet/mnasnet_b1_imagenet"]
    effnet_b1 = registry.model_entry("efficientnet_b1")
    assert (effnet_b1.recipes, effnet_b1.default_recipe) == ([], None)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_scan_agrees_with_gin(recipe):
    """The text scan (includes followed, last run.model wins) reads what gin parses, and the
    recipe's task is one of its variant's."""
    gin_config.parse([f"{recipe}.gin"], [])
    spec = RunSpec()
    assert registry._recipe_models()[recipe] == spec.model  # noqa: SLF001
    if spec.model is not None:
        entry = registry.model_entry(spec.model)
        assert spec.task.__name__ in (entry.task, *entry.other_tasks)


@pytest.mark.parametrize(
    ("figure", "digits", "admitted", "refused"),
    [
        ("3.4M", 2, (3_350_000, 3_449_999), (3_349_999, 3_450_000)),
        ("12M", 2, (11_500_000, 12_499_999), (11_499_999, 12_500_000)),
        ("42.68M", 4, (42_675_000, 42_684_999), (42_674_999, 42_685_000)),
        ("25,557,032", 8, (25_557_032,), (25_557_031, 25_557_033)),
    ],
)
def test_a_published_figure_admits_what_rounds_to_it(figure, digits, admitted, refused):
    count = PublishedCount(figure, "test")
    assert count.digits == digits
    assert all(count.admits(n) for n in admitted)
    assert not any(count.admits(n) for n in refused)


def _listed(capsys, *args: str) -> dict[str, list[str]]:
    """`python -m models ARGS` in this process: {variant: its columns}."""
    assert models_main.run(list(args)) == 0
    table, note = capsys.readouterr().out.split("\n\n")
    assert "built-in handwritten digits" in note  # what `default` trains
    return {line.split()[0]: line.split() for line in table.splitlines()[1:]}


def test_list_shows_input_task_and_fitting_recipes(capsys):
    lines = _listed(capsys, "--list")
    assert lines["resnet50"][1:5] == ["resnet", "224", "1", "ImageClassificationTask"]
    line = " ".join(lines["resnet50"])
    recipes = "default: resnet50_imagenet; recipes: resnet50_imagenet, resnet50_imagenet_lars"
    assert line.endswith(f"ResNet-50 v1.5; {recipes}")
    line = " ".join(lines["efficientnet_b3"])
    assert line.startswith("efficientnet_b3 efficientnet 300 1 ImageClassificationTask")
    assert line.endswith("; default: -; recipes: -")
    assert lines["amoebanet_d"][2:5] == ["299", "67", "AmoebaNetTask"]


def test_list_filters_by_wildcard_and_family(capsys):
    assert list(_listed(capsys, "--list", "resnet1*")) == [
        "resnet10",
        "resnet101",
        "resnet152",
        "resnet18",
    ]
    assert list(_listed(capsys, "--list", "--family=mobilenet")) == models.list_models("mobilenet")
    with pytest.raises(UsageError, match="did you mean 'mobilenet'"):
        models_main.run(["--family=mobilnet"])


def test_list_without_a_match_is_one_line(cli_env):
    command = [PYTHON, "-m", "models", "--list", "resnet9*"]
    bad = subprocess.run(command, capture_output=True, text=True, env=cli_env)
    assert (bad.returncode, bad.stderr) == (2, "error: no registered model matches 'resnet9*'\n")


def test_a_builder_argument_of_the_wrong_type_names_the_setting():
    """`compare_gan.width = "wide"` once failed deep in the model as "'<' not supported"."""
    with pytest.raises(UsageError, match=r"width='wide': expected int or None"):
        registry.create_model("biggan_32", width="wide")
    gin_config.parse([], ['compare_gan.width = "wide"'])
    with pytest.raises(UsageError, match=r"compare_gan.width = 'wide': expected int or None"):
        registry.create_model("biggan_32")
