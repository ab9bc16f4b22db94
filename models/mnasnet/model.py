"""Gin-configurable MnasNet builders, registered as mnasnet_a1 and mnasnet_b1.

MnasNet (Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile",
arXiv 1807.11626). Neither Model Garden nor tf_keras.applications has it, so the backbone is
written here from the published block lists (tensorflow/tpu models/official/mnasnet/
mnasnet_models.py, `mnasnet_a1` and `mnasnet_b1`; A1 is the paper's figure 7) out of Model
Garden's `InvertedBottleneckBlock`, with the reference's stem (3x3/2 conv, 32 x width, BN,
ReLU) and head (1x1 conv to 1280, BN, ReLU), under the shared classifier head (global pool,
dropout, dense logits).
"""

from __future__ import annotations

from typing import NamedTuple

import gin
import numpy as np
import tensorflow as tf
import tf_keras
from official.vision.modeling.layers import nn_blocks, nn_layers

from models.core.errors import UsageError, check_choice
from models.core.registry import PublishedCount, register_model
from models.tasks.classifier import classifier

layers = tf_keras.layers


class Stage(NamedTuple):
    """One row of the architecture: `repeats` blocks, the first with `stride`.

    kernel: depthwise kernel size; expand: expansion ratio (1 = the paper's SepConv, no
    expansion conv); filters: output filters at width 1.0; se_ratio: squeeze-excitation ratio
    of the block's input filters (None: no SE); skip: identity shortcut where shapes allow
    (False = the reference's `noskip`).
    """

    repeats: int
    kernel: int
    stride: int
    expand: int
    filters: int
    se_ratio: float | None = None
    skip: bool = True


# tensorflow/tpu models/official/mnasnet/mnasnet_models.py; the reference's block strings are
# in the comments (r: repeats, k: kernel, s: strides, e: expansion, i/o: in/out filters,
# se: SE ratio). Stem 32 and head 1280 for both.
STAGES = {
    # MnasNet-A1 (paper figure 7): SE in the 40-, 112- and 160-filter stages.
    "a1": (
        Stage(1, 3, 1, 1, 16, skip=False),  # r1_k3_s11_e1_i32_o16_noskip (SepConv 3x3)
        Stage(2, 3, 2, 6, 24),  # r2_k3_s22_e6_i16_o24
        Stage(3, 5, 2, 3, 40, 0.25),  # r3_k5_s22_e3_i24_o40_se0.25
        Stage(4, 3, 2, 6, 80),  # r4_k3_s22_e6_i40_o80
        Stage(2, 3, 1, 6, 112, 0.25),  # r2_k3_s11_e6_i80_o112_se0.25
        Stage(3, 5, 2, 6, 160, 0.25),  # r3_k5_s22_e6_i112_o160_se0.25
        Stage(1, 3, 1, 6, 320),  # r1_k3_s11_e6_i160_o320
    ),
    # MnasNet-B1: searched without SE in the search space (the paper's ablation).
    "b1": (
        Stage(1, 3, 1, 1, 16, skip=False),  # r1_k3_s11_e1_i32_o16_noskip (SepConv 3x3)
        Stage(3, 3, 2, 3, 24),  # r3_k3_s22_e3_i16_o24
        Stage(3, 5, 2, 3, 40),  # r3_k5_s22_e3_i24_o40
        Stage(3, 5, 2, 6, 80),  # r3_k5_s22_e6_i40_o80
        Stage(2, 3, 1, 6, 96),  # r2_k3_s11_e6_i80_o96
        Stage(4, 5, 2, 6, 192),  # r4_k5_s22_e6_i96_o192
        Stage(1, 3, 1, 6, 320, skip=False),  # r1_k3_s11_e6_i192_o320_noskip
    ),
}
VARIANTS = tuple(STAGES)
STEM_FILTERS = 32
HEAD_FILTERS = 1280  # not scaled by depth_multiplier (reference: filters=1280 fixed)
DEPTH_DIVISOR = 8


def conv_initializer() -> tf_keras.initializers.Initializer:
    """The reference's conv init: normal, stddev sqrt(2 / fan_out) (untruncated)."""
    return tf_keras.initializers.VarianceScaling(2.0, "fan_out", "untruncated_normal")


def dense_initializer() -> tf_keras.initializers.Initializer:
    """The reference's dense init: uniform in +-1/sqrt(num_classes)."""
    return tf_keras.initializers.VarianceScaling(1.0 / 3.0, "fan_out", "uniform")


class MnasNet(tf_keras.Model):
    """MnasNet backbone in Model Garden's shape: takes `input_specs`, returns endpoints.

    Endpoints '2'..'5' are the last block outputs at strides 4, 8, 16 and 32 (for detection
    heads); '6' is the classification head's 1x1 conv to 1280 + BN + ReLU (stride 32), the
    highest key, which Model Garden's ClassificationModel pools (EfficientNet's convention).
    """

    def __init__(
        self,
        input_specs: tf_keras.layers.InputSpec,
        variant: str = "a1",
        depth_multiplier: float = 1.0,
        drop_connect_rate: float = 0.0,
        use_sync_bn: bool = False,
        norm_momentum: float = 0.99,
        norm_epsilon: float = 1e-3,
        output_stride: int | None = None,
        **kwargs,
    ):
        check_choice(variant, VARIANTS, "mnasnet.variant")
        if depth_multiplier <= 0:
            raise UsageError(f"mnasnet.depth_multiplier={depth_multiplier}: must be positive")
        if not 0.0 <= drop_connect_rate < 1.0:
            raise UsageError(f"mnasnet.drop_connect_rate={drop_connect_rate}: must be in [0, 1)")
        if output_stride is not None and output_stride not in (4, 8, 16, 32):
            raise UsageError(f"mnasnet.output_stride={output_stride}: use 4, 8, 16, 32 or None")
        self._config_dict = {
            "variant": variant,
            "depth_multiplier": depth_multiplier,
            "drop_connect_rate": drop_connect_rate,
            "use_sync_bn": use_sync_bn,
            "norm_momentum": norm_momentum,
            "norm_epsilon": norm_epsilon,
            "output_stride": output_stride,
        }
        self._input_specs = input_specs

        def width(filters: int) -> int:
            return nn_layers.round_filters(filters, depth_multiplier, DEPTH_DIVISOR)

        def conv_bn_relu(x, filters: int, kernel: int, strides: int, name: str):
            x = layers.Conv2D(
                filters,
                kernel,
                strides=strides,
                padding="same",
                use_bias=False,
                kernel_initializer=conv_initializer(),
                name=f"{name}_conv",
            )(x)
            x = layers.BatchNormalization(
                momentum=norm_momentum,
                epsilon=norm_epsilon,
                synchronized=use_sync_bn,
                name=f"{name}_bn",
            )(x)
            return layers.Activation("relu", name=f"{name}_relu")(x)

        inputs = tf_keras.Input(shape=input_specs.shape[1:])
        x = conv_bn_relu(inputs, width(STEM_FILTERS), 3, 2, "stem")
        in_filters = width(STEM_FILTERS)
        stages = STAGES[variant]
        total_blocks = sum(stage.repeats for stage in stages)
        # stride: the nominal stride so far (names the endpoints); dilated: the stride actually
        # applied, held at output_stride, after which strides become dilation (`rate`).
        endpoints, stride, dilated, rate, block_index = {}, 2, 2, 1, 0
        for stage_index, stage in enumerate(stages):
            out_filters = width(stage.filters)
            for repeat in range(stage.repeats):
                strides = stage.stride if repeat == 0 else 1
                block_rate = rate
                if output_stride is not None and dilated * strides > output_stride:
                    rate, strides_applied = rate * strides, 1
                else:
                    strides_applied = strides
                    dilated *= strides
                x = nn_blocks.InvertedBottleneckBlock(
                    in_filters=in_filters,
                    out_filters=out_filters,
                    expand_ratio=stage.expand,
                    strides=strides_applied,
                    kernel_size=stage.kernel,
                    dilation_rate=block_rate,
                    se_ratio=stage.se_ratio,
                    stochastic_depth_drop_rate=nn_layers.get_stochastic_depth_rate(
                        drop_connect_rate or None, block_index, total_blocks
                    ),
                    kernel_initializer=conv_initializer(),
                    activation="relu",
                    se_inner_activation="relu",
                    se_gating_activation="sigmoid",
                    use_residual=stage.skip,
                    use_sync_bn=use_sync_bn,
                    norm_momentum=norm_momentum,
                    norm_epsilon=norm_epsilon,
                    name=f"stage{stage_index}_block{repeat}",
                )(x)
                in_filters, stride, block_index = out_filters, stride * strides, block_index + 1
            last_at_stride = stage_index + 1 == len(stages) or stages[stage_index + 1].stride > 1
            if stride >= 4 and last_at_stride:
                endpoints[str(int(np.log2(stride)))] = x
        endpoints[str(len(endpoints) + 2)] = conv_bn_relu(x, HEAD_FILTERS, 1, 1, "head")
        self._output_specs = {level: tensor.get_shape() for level, tensor in endpoints.items()}
        super().__init__(inputs=inputs, outputs=endpoints, name=f"mnasnet_{variant}", **kwargs)

    def get_config(self):
        return dict(self._config_dict)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)

    @property
    def output_specs(self):
        """{level: TensorShape} of every endpoint."""
        return self._output_specs


@gin.configurable
def mnasnet(
    num_classes: int = 1000,
    image_size: int = 224,
    variant: str = "a1",
    depth_multiplier: float = 1.0,
    dropout_rate: float = 0.2,
    drop_connect_rate: float = 0.0,
    norm_momentum: float = 0.99,
    norm_epsilon: float = 1e-3,
    use_sync_bn: bool = False,
    output_stride: int | None = None,
) -> tf_keras.Model:
    """MnasNet-`variant` classifier that outputs logits: the MnasNet backbone (stem, blocks,
    1x1 conv to 1280) + global average pool + dropout + dense.

    `depth_multiplier` scales the stem and block filters (rounded to multiples of 8, never
    more than 10% down, as the reference's round_filters); the 1280-filter head conv is fixed,
    as in the reference. `drop_connect_rate` is stochastic depth on the residual blocks,
    rising linearly to the rate at the last block (the reference MnasNet uses none: 0).
    `use_sync_bn` is cross-replica BN. `output_stride` (4, 8 or 16; None = 32, the paper's)
    replaces the strides past it by dilation, as Model Garden's MobileNet does, for tiny
    images (32x32 would otherwise end at 1x1). Weight decay is the recipe's `weight_decay.rate`,
    applied by core, not a regulariser.
    """
    check_choice(variant, VARIANTS, "mnasnet.variant")
    return classifier(
        MnasNet,
        image_size,
        num_classes,
        dropout_rate,
        kernel_initializer=dense_initializer(),
        variant=variant,
        depth_multiplier=depth_multiplier,
        drop_connect_rate=drop_connect_rate,
        use_sync_bn=use_sync_bn,
        norm_momentum=norm_momentum,
        norm_epsilon=norm_epsilon,
        output_stride=output_stride,
    )


def multiply_adds(model: tf_keras.Model) -> int:
    """Multiply-adds of one image through `model`'s convolutions and dense layers (the
    papers' "Mult-Adds"; BN, activations, pooling and additions are not counted)."""
    shape = [1, *model.input_shape[1:]]
    graph = (
        tf.function(lambda x: model(x, training=False))
        .get_concrete_function(tf.TensorSpec(shape, tf.float32))
        .graph
    )
    total = 0
    for op in graph.get_operations():
        if op.type in ("Conv2D", "DepthwiseConv2dNative"):
            out = op.outputs[0].shape.as_list()  # [1, H, W, C_out]
            kernel = op.inputs[1].shape.as_list()  # [k, k, C_in, C_out] or [k, k, C, m]
            per_output = kernel[0] * kernel[1] * (kernel[2] if op.type == "Conv2D" else 1)
            total += out[1] * out[2] * out[3] * per_output
        elif op.type == "MatMul":
            total += int(np.prod(op.inputs[1].shape.as_list()))
    return total


_DESCRIPTIONS = {
    "a1": "MnasNet-A1 (Tan et al. 2019, with SE)",
    "b1": "MnasNet-B1 (Tan et al. 2019, searched without SE)",
}
# Tan et al. 2019, arXiv 1807.11626: A1 3.9M (table 1; also the tensorflow/tpu
# models/official/mnasnet README), B1 4.4M (its table number differs between arXiv versions).
_PAPER = "Tan et al. 2019, arXiv 1807.11626"
_TPU_README = "tensorflow/tpu models/official/mnasnet/README.md, MnasNet-A1 at depth multiplier"
_TPU_README_A1 = {0.35: "1.7M", 0.5: "2.1M", 0.75: "2.9M", 1.4: "6.1M"}
PUBLISHED = {
    "a1": (
        PublishedCount("3.9M", f"{_PAPER}, table 1"),
        *(
            PublishedCount(figure, f"{_TPU_README} {m}", config={"depth_multiplier": m})
            for m, figure in _TPU_README_A1.items()
        ),
    ),
    "b1": (
        PublishedCount("4.4M", f"{_PAPER}, MnasNet-B1 row"),
        # torchvision's mnasnet1_0 builds the same block list independently.
        PublishedCount("4,383,312", "torchvision MNASNet1_0_Weights.IMAGENET1K_V1 (num_params)"),
    ),
}
for _variant in VARIANTS:
    register_model(
        f"mnasnet_{_variant}",
        family="mnasnet",
        description=_DESCRIPTIONS[_variant],
        fixed={"variant": _variant},
        published=PUBLISHED[_variant],
    )(mnasnet)
