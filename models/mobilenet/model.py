"""Gin-configurable MobileNet builder, registered as mobilenet_v1, _v2, _v3_large, _v3_small."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.modeling.backbones import mobilenet as mobilenet_backbone

from models.core.errors import check_choice
from models.core.registry import PublishedCount, register_model
from models.tasks.classifier import classifier

# version -> (Model Garden model_id, description). The v2/v3 specs end in the paper's
# last 1x1 conv (v2: 1280 + BN; v3: pool, then 1280/1024 with bias, no BN), so the head
# here is only dropout + the dense logits layer.
VERSIONS = {
    "v1": ("MobileNetV1", "MobileNet v1 (Howard et al. 2017)"),
    "v2": ("MobileNetV2", "MobileNet v2 (Sandler et al. 2018)"),
    "v3_large": ("MobileNetV3Large", "MobileNet v3-large (Howard et al. 2019)"),
    "v3_small": ("MobileNetV3Small", "MobileNet v3-small (Howard et al. 2019)"),
}


@gin.configurable
def mobilenet(
    num_classes: int = 1000,
    image_size: int = 224,
    version: str = "v2",
    width_multiplier: float = 1.0,
    dropout_rate: float = 0.2,
    use_sync_bn: bool = False,
    norm_momentum: float = 0.99,
    norm_epsilon: float = 1e-3,
    stochastic_depth_rate: float = 0.0,
    output_stride: int | None = None,
    finegrain_classification_mode: bool = True,
) -> tf_keras.Model:
    """MobileNet `version` classifier at `width_multiplier` (the papers' alpha): Model Garden
    backbone + global pool + dropout + dense logits. `output_stride` (e.g. 8 or 16) replaces
    the last strides by dilation, for small images; `finegrain_classification_mode` keeps the
    last conv at full width when width < 1 (v2/v3, as Sandler et al. do). Weight decay is the
    recipe's `weight_decay.rate`, applied by core."""
    check_choice(version, VERSIONS, "mobilenet.version")
    return classifier(
        mobilenet_backbone.MobileNet,
        image_size,
        num_classes,
        dropout_rate,
        model_id=VERSIONS[version][0],
        filter_size_scale=width_multiplier,
        use_sync_bn=use_sync_bn,
        norm_momentum=norm_momentum,
        norm_epsilon=norm_epsilon,
        stochastic_depth_drop_rate=stochastic_depth_rate,
        output_stride=output_stride,
        finegrain_classification_mode=finegrain_classification_mode,
    )


# Parameter counts of the 1000-class, 224x224, width-1.0 classifiers as published.
PUBLISHED = {
    "v1": (PublishedCount("4.2M", "Howard et al. 2017, arXiv 1704.04861, table 8"),),
    "v2": (
        PublishedCount(
            "3.4M",
            "Sandler et al. 2018, arXiv 1801.04381, table 4",
            disagrees="3,504,872 here (3.5M); the authors' release prints 3.47M (without BN)",
        ),
        PublishedCount(
            "3.47M",
            "tensorflow/models research/slim/nets/mobilenet/README.md, mobilenet_v2_1.0_224",
            counting="without_bn",
        ),
    ),
    "v3_large": (
        PublishedCount(
            "5.4M",
            "Howard et al. 2019, arXiv 1905.02244, table 3",
            disagrees="5,483,032 here (5.5M), as timm and Keras Applications count it: the "
            "figure looks truncated, as v2's 3.4M is, and no source prints more digits",
        ),
    ),
    "v3_small": (PublishedCount("2.5M", "Howard et al. 2019, arXiv 1905.02244, table 3"),),
}

for _version, (_, _description) in VERSIONS.items():
    register_model(
        f"mobilenet_{_version}",
        family="mobilenet",
        description=_description,
        fixed={"version": _version},
        published=PUBLISHED[_version],
    )(mobilenet)
