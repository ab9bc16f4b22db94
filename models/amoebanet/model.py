"""Gin-configurable AmoebaNet-D builder, registered as amoebanet_d and amoebanet_d_small.

AmoebaNet-D is the cell that regularized evolution found for fast training on Cloud TPUs (Real
et al. 2019, arXiv 1802.01548, appendix), as the Cloud TPU reference builds it (tensorflow/tpu
models/official/amoeba_net: model_specs.py, network_utils.py, model_builder.py): a stem, then
`num_cells` normal cells in three stacks with a reduction cell (stride 2, twice the filters)
before the second and the third, then ReLU, global average pool, dropout and dense logits.
The shared image-classification task trains the auxiliary head (`aux_loss_weight`, 0.4);
`AmoebaNetTask` (task.py) adds the drop-path schedule (the drop rate rises linearly from 0 to
1 - keep probability).
"""

from __future__ import annotations

from dataclasses import dataclass

import gin
import tensorflow as tf
import tf_keras

from models.core.errors import UsageError
from models.core.registry import PublishedCount, register_model
from models.tasks.auxiliary import AuxiliaryLogits

layers = tf_keras.layers
STEM_TYPES = ("imagenet", "basic")


@dataclass(frozen=True)
class CellSpec:
    """Five combinations, each the sum of two (operation, input state) branches. States 0 and 1
    are the cell's input (after a 1x1 conv) and the previous cell's output; combination k
    makes state k + 2. The cell's output concatenates the states listed in `outputs`."""

    combinations: tuple[tuple[tuple[str, int], tuple[str, int]], ...]
    outputs: tuple[int, ...]


# AmoebaNet-D (model_specs.py, 'amoeba_net_d'): "1x7_7x1" and "3x3" are bottlenecked convs,
# "none" is the identity (a 1x1 conv where the stride or width must change).
NORMAL_CELL = CellSpec(
    combinations=(
        (("1x1", 1), ("max_pool_3x3", 1)),
        (("none", 1), ("1x7_7x1", 0)),
        (("1x1", 0), ("1x7_7x1", 0)),
        (("max_pool_3x3", 2), ("none", 2)),
        (("avg_pool_3x3", 1), ("1x1", 5)),
    ),
    outputs=(0, 3, 4, 6),
)
REDUCTION_CELL = CellSpec(
    combinations=(
        (("max_pool_2x2", 0), ("max_pool_3x3", 0)),
        (("none", 2), ("3x3", 1)),
        (("1x7_7x1", 2), ("max_pool_3x3", 2)),
        (("none", 3), ("max_pool_2x2", 1)),
        (("avg_pool_3x3", 2), ("1x1", 3)),
    ),
    outputs=(4, 5, 6),
)


class ScheduledDropPath(layers.Layer):
    """Drop path: zeroes a whole branch for an example with probability `drop_rate` x
    `progress` (a shared variable in [0, 1]) and rescales the kept ones; identity at eval."""

    def __init__(self, drop_rate: float, progress: tf.Variable, **kwargs):
        super().__init__(**kwargs)
        self.drop_rate = drop_rate
        self.progress = progress

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        if training is None:
            training = tf_keras.backend.learning_phase()
        if not training:
            return inputs
        keep = 1.0 - self.drop_rate * tf.cast(self.progress, inputs.dtype)
        noise = tf.random.uniform([tf.shape(inputs)[0], 1, 1, 1], dtype=inputs.dtype)
        return inputs / keep * tf.floor(keep + noise)


@dataclass(frozen=True)
class _Layers:
    """Layer factory holding the settings every conv, BN and drop path shares."""

    norm_momentum: float
    norm_epsilon: float
    use_sync_bn: bool
    drop_rate: float
    progress: tf.Variable

    def conv(self, filters: int, kernel, strides=1, padding: str = "same") -> layers.Layer:
        # The reference initialises every weight with variance scaling (factor 2, fan-out).
        init = tf_keras.initializers.VarianceScaling(2.0, "fan_out", "truncated_normal")
        return layers.Conv2D(
            filters, kernel, strides, padding, use_bias=False, kernel_initializer=init
        )

    def bn(self) -> layers.Layer:
        return layers.BatchNormalization(
            momentum=self.norm_momentum, epsilon=self.norm_epsilon, synchronized=self.use_sync_bn
        )

    def relu_conv_bn(self, x, filters: int, kernel=1, strides=1):
        return self.bn()(self.conv(filters, kernel, strides)(layers.ReLU()(x)))

    def drop_path(self, x):
        return ScheduledDropPath(self.drop_rate, self.progress)(x) if self.drop_rate else x


def _factorized_reduction(f: _Layers, x, filters: int):
    """Halves the grid without dropping pixels: two stride-2 1x1 convs, the second on the
    grid shifted by one pixel, concatenated, then BN (network_utils.factorized_reduction)."""
    path1 = f.conv(filters // 2, 1)(layers.AveragePooling2D(1, 2, padding="valid")(x))
    shifted = layers.Cropping2D(((1, 0), (1, 0)))(layers.ZeroPadding2D(((0, 1), (0, 1)))(x))
    path2 = f.conv(filters // 2, 1)(layers.AveragePooling2D(1, 2, padding="valid")(shifted))
    return f.bn()(layers.Concatenate()([path1, path2]))


def _match_previous(f: _Layers, prev, x, filters: int):
    """The previous cell's output brought to this cell's grid and width."""
    if prev is None:
        return x
    if prev.shape[2] != x.shape[2]:
        return _factorized_reduction(f, layers.ReLU()(prev), filters)
    if prev.shape[-1] != filters:
        return f.relu_conv_bn(prev, filters)
    return prev


def _bottleneck(f: _Layers, x, operation: str, strides: int, filters: int):
    """ReLU-1x1 to filters/4, the 3x3 or 1x7-then-7x1 conv, ReLU-1x1 back (BN after each);
    without the 1x1s where filters/4 < 1, as the reference does."""
    narrow = filters // 4 >= 1
    inner = filters // 4 if narrow else filters
    x = layers.ReLU()(f.relu_conv_bn(x, inner) if narrow else x)
    if operation == "3x3":
        x = f.conv(inner, 3, strides)(x)
    else:
        x = layers.ReLU()(f.bn()(f.conv(inner, (1, 7), (1, strides))(x)))
        x = f.conv(inner, (7, 1), (strides, 1))(x)
    x = f.bn()(x)
    return f.relu_conv_bn(x, filters) if narrow else x


def _operation(f: _Layers, x, operation: str, strides: int, filters: int):
    """One branch of a combination; every branch but the identity ends in drop path."""
    widen = x.shape[-1] != filters
    if operation == "none":
        return f.relu_conv_bn(x, filters, 1, strides) if strides > 1 or widen else x
    if operation == "1x1":
        x = f.relu_conv_bn(x, filters, 1, strides)
    elif operation.endswith("pool_2x2") or operation.endswith("pool_3x3"):
        pool = layers.MaxPooling2D if operation.startswith("max") else layers.AveragePooling2D
        x = pool(int(operation[-1]), strides, padding="same")(x)
        x = f.bn()(f.conv(filters, 1)(x)) if widen else x
    else:
        x = _bottleneck(f, x, operation, strides, filters)
    return f.drop_path(x)


def _cell(f: _Layers, x, prev, spec: CellSpec, filters: int, strides: int):
    """A normal (strides 1) or reduction (strides 2) cell with `filters` per branch."""
    states = [f.relu_conv_bn(x, filters), _match_previous(f, prev, x, filters)]
    for branches in spec.combinations:
        outs = [
            _operation(f, states[i], op, strides if i < 2 else 1, filters) for op, i in branches
        ]
        states.append(layers.Add()(outs))
    return layers.Concatenate()([states[i] for i in spec.outputs])


def _aux_head(f: _Layers, x, num_classes: int, scaling: float):
    """Auxiliary classifier: 5x5/3 average pool, 1x1 conv, a conv over the whole remaining
    grid, dense logits (model_builder._build_aux_head; widths 128 and 768 x scaling)."""
    if x.shape[1] < 5:
        raise UsageError(
            f"amoebanet.use_aux_head needs a grid of at least 5x5 before the second reduction "
            f"(it is {x.shape[1]}x{x.shape[2]}); use larger images or use_aux_head = False"
        )
    x = layers.AveragePooling2D(5, 3, padding="valid")(layers.ReLU()(x))
    x = layers.ReLU()(f.bn()(f.conv(int(128 * scaling), 1)(x)))
    x = layers.ReLU()(f.bn()(f.conv(int(768 * scaling), x.shape[1:3], padding="valid")(x)))
    return _dense(num_classes, "aux_logits")(layers.Flatten()(x))


def _dense(num_classes: int, name: str) -> layers.Layer:
    init = tf_keras.initializers.VarianceScaling(2.0, "fan_out", "truncated_normal")
    return layers.Dense(num_classes, kernel_initializer=init, name=name, dtype="float32")


def reduction_cell_indices(num_cells: int) -> list[int]:
    """Normal-cell indices preceded by a reduction cell: num_cells/3 and 2 num_cells/3."""
    return [int(k / 3 * num_cells) for k in (1, 2)]


def _stem(f: _Layers, x, stem_type: str, stem_filters: int, filters: int) -> list:
    """The stem's outputs, last first-to-feed: imagenet = 3x3/2 conv + 2 reduction cells at
    filters/4 and filters/2; basic = one 3x3 conv (both convs 'valid', then BN, no ReLU)."""
    strides = 2 if stem_type == "imagenet" else 1
    outputs = [None, f.bn()(f.conv(stem_filters, 3, strides, padding="valid")(x))]
    if stem_type == "imagenet":
        for width in (filters // 4, filters // 2):
            outputs.append(_cell(f, outputs[-1], outputs[-2], REDUCTION_CELL, width, 2))
    return outputs


class AmoebaNet(AuxiliaryLogits):
    """AuxiliaryLogits with `drop_path_progress`, the variable that scales every drop-path rate
    (1.0: the full 1 - keep probability; `AmoebaNetTask` ramps it over training)."""

    def __init__(
        self,
        network: tf_keras.Model,
        drop_path_progress: tf.Variable,
        aux_network: tf_keras.Model | None = None,
        **kwargs,
    ):
        super().__init__(network, aux_network, **kwargs)
        self.drop_path_progress = drop_path_progress


def _check(num_cells: int, filters: int, stem_type: str, keep: float, dropout: float) -> None:
    """One UsageError for the first bad setting."""
    if num_cells < 2:
        raise UsageError(
            f"amoebanet.num_cells={num_cells}: use at least 2 (normal cells over all three "
            "stacks; the 2 reduction cells go before cells num_cells/3 and 2*num_cells/3)"
        )
    if filters < 4 or filters % 4:
        raise UsageError(f"amoebanet.filters={filters}: use a positive multiple of 4")
    if stem_type not in STEM_TYPES:
        raise UsageError(f"amoebanet.stem_type='{stem_type}': use {' or '.join(STEM_TYPES)}")
    if not 0.0 < keep <= 1.0:
        raise UsageError(f"amoebanet.drop_path_keep_prob={keep}: use a value in (0, 1]")
    if not 0.0 <= dropout < 1.0:
        raise UsageError(f"amoebanet.dropout_rate={dropout}: use a value in [0, 1)")


@gin.configurable
def amoebanet(
    num_classes: int = 1000,
    image_size: int = 299,
    num_cells: int = 12,
    filters: int = 256,
    stem_type: str = "imagenet",
    stem_filters: int = 32,
    drop_path_keep_prob: float = 1.0,
    dropout_rate: float = 0.5,
    norm_momentum: float = 0.9,
    norm_epsilon: float = 1e-5,
    use_sync_bn: bool = False,
    use_aux_head: bool = True,
    aux_scaling: float = 0.4,
) -> AmoebaNet:
    """AmoebaNet-D classifier returning logits. Defaults are the TPU reference's flags.

    num_cells: normal cells over all three stacks (the reference's `num_cells`; the paper's N
    is per stack, so N = num_cells / 3). filters: the first stack's width per branch (the
    reference's `reduction_size`, the paper's F); cells concatenate 4 (normal) or 3 (reduction)
    branches. stem_type: "imagenet" (3x3/2 conv of `stem_filters`, then two reduction cells) or
    "basic" (one 3x3 conv, for small images). drop_path_keep_prob: the final keep probability
    of every non-identity branch (1.0 disables drop path; `AmoebaNetTask` ramps the rate up
    over training). dropout_rate: before the logits (keep 0.5 in the reference).
    use_aux_head: auxiliary classifier after the last cell of the second stack, trained with
    `ImageClassificationTask.aux_loss_weight`, ignored at eval and export; its widths are 128
    and 768 x aux_scaling.
    """
    _check(num_cells, filters, stem_type, drop_path_keep_prob, dropout_rate)
    progress = tf.Variable(
        1.0,
        trainable=False,
        name="drop_path_progress",
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
    )
    f = _Layers(norm_momentum, norm_epsilon, use_sync_bn, 1.0 - drop_path_keep_prob, progress)
    inputs = layers.Input((image_size, image_size, 3))
    outputs = _stem(f, inputs, stem_type, stem_filters, filters)
    reductions = reduction_cell_indices(num_cells)
    width, aux = filters, None
    for index in range(num_cells):
        if index in reductions:
            width *= 2
            outputs.append(_cell(f, outputs[-1], outputs[-2], REDUCTION_CELL, width, 2))
        outputs.append(_cell(f, outputs[-1], outputs[-2], NORMAL_CELL, width, 1))
        if use_aux_head and index == reductions[1] - 1:
            aux = _aux_head(f, outputs[-1], num_classes, aux_scaling)
    x = layers.GlobalAveragePooling2D()(layers.ReLU()(outputs[-1]))
    x = layers.Dropout(dropout_rate)(x) if dropout_rate else x
    logits = _dense(num_classes, "logits")(x)
    network = tf_keras.Model(inputs, logits)
    aux_network = tf_keras.Model(inputs, [logits, aux]) if aux is not None else None
    model = AmoebaNet(network, progress, aux_network, name="amoebanet_d")
    model.build((None, image_size, image_size, 3))
    return model


# GPipe (Huang et al. 2019, arXiv 1811.06965), Table 1, AmoebaNet-D (L, D) = (18, 208) at
# 224x224: 82M (kakaobrain/torchgpipe benchmarks/amoebanetd-memory/README.md copies the row).
# L = num_cells, D = filters. GPipe does not say whether the auxiliary head counts: with it
# the builder gives 81.78M, without it 81.14M (README). Nobody publishes a count for the
# configuration the TPU reference trains (12 cells, 256 filters, 299x299).
GPIPE_18_208 = PublishedCount(
    "82M",
    "GPipe, Huang et al. 2019, arXiv 1811.06965, table 1, AmoebaNet-D (18, 208)",
    config={"num_cells": 18, "filters": 208, "image_size": 224},
)
register_model(
    "amoebanet_d",
    family="amoebanet",
    description="AmoebaNet-D (TPU reference)",
    task="AmoebaNetTask",
    # The auxiliary head needs a 5x5 grid in the second stack: the stem's valid 3x3/2 conv,
    # then three halvings (two stem cells, one reduction cell) must leave 5 pixels.
    min_image_size=67,
    published=(GPIPE_18_208,),
)(amoebanet)
register_model(
    "amoebanet_d_small",
    family="amoebanet",
    description="small AmoebaNet-D for 32x32 images",
    task="AmoebaNetTask",
    defaults={
        "image_size": 32,
        "num_cells": 2,
        "filters": 16,
        "stem_type": "basic",
        "stem_filters": 16,
        "dropout_rate": 0.0,
        "use_aux_head": False,
    },
    min_image_size=3,  # the basic stem's valid 3x3 conv
)(amoebanet)
