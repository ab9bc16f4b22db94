"""Compare GAN's building blocks in Keras (what compare_gan's arch_ops.py and resnet_ops.py do):

- dense, convolution, transposed-convolution and embedding layers whose kernel is divided in
  the forward pass by its largest singular value when `spectral_norm` (Miyato et al. 2018):
  one power iteration a training call, the gradient flowing through sigma;
- batch norm whose statistics span every replica, plain (Keras') or conditional (gain and
  offset a linear map of a condition vector: BigGAN's [z chunk, class embedding]), and layer
  norm over each example;
- SAGAN's non-local (self-attention) block;
- the pre-activation residual blocks of the generators (upsampling) and discriminators.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import tensorflow as tf
import tf_keras

SN_EPSILON = 1e-12  # compare_gan's spectral_norm: epsilon of its l2 normalisations
BN_MOMENTUM = 0.9  # compare_gan's recipes: standardize_batch.decay = 0.9
BN_EPSILON = 1e-5  # ... and standardize_batch.epsilon = 1e-5
LN_EPSILON = 1e-6
D_NORMALIZATIONS = ("none", "batch", "layer", "spectral")  # Kurach et al. 2019's
G_NORMALIZATIONS = ("none", "batch")
UPSAMPLINGS = ("unpool", "nearest")
INITIALIZERS = ("normal", "orthogonal", "glorot_normal")


@dataclass(frozen=True)
class GanSpec:
    """The settings every architecture reads: the builder's arguments, defaults resolved."""

    image_size: int
    channels: int
    num_classes: int
    z_dim: int
    width: int  # the generator's channel unit
    d_width: int  # the discriminator's
    d_normalization: str  # one of D_NORMALIZATIONS ("spectral" normalises the weights)
    g_normalization: str  # one of G_NORMALIZATIONS
    g_spectral_norm: bool
    hierarchical_z: bool
    shared_embedding_dim: int  # 0: the generator's blocks see the one-hot label
    g_attention: tuple[str, ...]  # blocks followed by a non-local block ("B4")
    d_attention: tuple[str, ...]
    upsampling: str  # "unpool" (compare_gan's zero insertion) or "nearest"
    initializer: str  # "normal" (N(0, 0.02), compare_gan's default) or "orthogonal"

    @property
    def conditional(self) -> bool:
        return self.num_classes > 0

    @property
    def d_spectral_norm(self) -> bool:
        return self.d_normalization == "spectral"

    @property
    def g_conditional_norm(self) -> bool:
        """Whether the generator's block BNs are conditional: they have a condition (a class
        vector or a chunk of z) to take gain and offset from."""
        return self.g_normalization == "batch" and (self.conditional or self.hierarchical_z)


def kernel_initializer(name: str) -> tf_keras.initializers.Initializer:
    """A fresh initializer (an unseeded Keras initializer repeats its values when reused)."""
    if name == "orthogonal":
        return tf_keras.initializers.Orthogonal()
    if name == "glorot_normal":
        return tf_keras.initializers.GlorotNormal()
    return tf_keras.initializers.RandomNormal(stddev=0.02)


def training_flag(training: bool | tf.Tensor | None) -> bool:
    """`training` as a Python bool (None: inference); a symbolic tensor cannot choose."""
    if tf.is_tensor(training):
        value = tf.get_static_value(training)
        if value is None:
            raise ValueError("compare_gan layers need training as a Python bool")
        return bool(value)
    return bool(training)


def power_iteration(matrix: tf.Tensor, u: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One power iteration from left vector u [rows, 1]: (u, v) estimating the first left and
    right singular vectors of `matrix` [rows, cols], without gradient (as SN-GAN)."""
    v = tf.math.l2_normalize(tf.matmul(matrix, u, transpose_a=True), axis=None, epsilon=SN_EPSILON)
    u = tf.math.l2_normalize(tf.matmul(matrix, v), axis=None, epsilon=SN_EPSILON)
    return tf.stop_gradient(u), tf.stop_gradient(v)


class KernelLayer(tf_keras.layers.Layer):
    """A layer with one kernel and maybe a bias; with `spectral_norm` the kernel, reshaped to
    [-1, last axis], is divided in the forward pass by sigma = u^T W v, its largest singular
    value estimated by one power iteration a call (compare_gan's spectral_norm with
    singular_value="auto": u has the matrix's smaller side).

    u is saved only in training; it is not trained and is written on the first replica and
    mirrored to the others (ON_WRITE, ONLY_FIRST_REPLICA), so that a replica may assign it
    inside MirroredStrategy or TPUStrategy. Variables stay float32 (no autocast); the kernel
    is cast to the compute dtype after normalisation."""

    def __init__(
        self,
        spectral_norm: bool = False,
        use_bias: bool = True,
        initializer: str = "normal",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.spectral_norm, self.use_bias, self.initializer = spectral_norm, use_bias, initializer
        self.u, self.bias, self._transposed = None, None, False

    def add_kernel(self, shape: Sequence[int], bias_size: int, name: str = "kernel") -> None:
        """Creates the kernel, the bias (if `use_bias`) and u (if `spectral_norm`)."""
        self.kernel = self.add_weight(
            name,
            list(shape),
            initializer=kernel_initializer(self.initializer),
            experimental_autocast=False,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", [bias_size], initializer="zeros", experimental_autocast=False
            )
        if self.spectral_norm:
            rows, cols = math.prod(shape[:-1]), shape[-1]
            self._transposed = rows > cols
            self.u = self.add_weight(
                "u",
                [min(rows, cols), 1],
                initializer=tf_keras.initializers.RandomNormal(),
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_WRITE,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
                experimental_autocast=False,
            )

    def normalized_kernel(self, training: bool = False) -> tf.Tensor:
        """The kernel (float32), divided by its spectral norm's estimate if `spectral_norm`;
        in training the estimate's u is saved for the next call."""
        kernel = tf.convert_to_tensor(self.kernel)
        if not self.spectral_norm:
            return kernel
        matrix = tf.reshape(kernel, [-1, kernel.shape[-1]])
        if self._transposed:
            matrix = tf.transpose(matrix)
        u, v = power_iteration(matrix, tf.convert_to_tensor(self.u))
        if training:
            self.u.assign(u)
        sigma = tf.matmul(u, tf.matmul(matrix, v), transpose_a=True)
        return kernel / tf.reshape(sigma, [])

    def compute_kernel(self, training: bool | tf.Tensor | None) -> tf.Tensor:
        """The normalised kernel in the compute dtype."""
        return tf.cast(self.normalized_kernel(training_flag(training)), self.compute_dtype)

    def add_bias(self, outputs: tf.Tensor) -> tf.Tensor:
        if self.bias is None:
            return outputs
        return tf.nn.bias_add(outputs, tf.cast(self.bias, self.compute_dtype))


class Dense(KernelLayer):
    """x W + b (compare_gan's linear)."""

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape: tf.TensorShape) -> None:
        self.add_kernel([int(input_shape[-1]), self.units], self.units)
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        return self.add_bias(tf.matmul(inputs, self.compute_kernel(training)))


class Conv2D(KernelLayer):
    """A square convolution with SAME padding (compare_gan's conv2d)."""

    def __init__(self, filters: int, kernel_size: int, strides: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.filters, self.kernel_size, self.strides = filters, kernel_size, strides

    def build(self, input_shape: tf.TensorShape) -> None:
        size = self.kernel_size
        self.add_kernel([size, size, int(input_shape[-1]), self.filters], self.filters)
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        kernel = self.compute_kernel(training)
        return self.add_bias(tf.nn.conv2d(inputs, kernel, self.strides, "SAME"))


class Conv2DTranspose(KernelLayer):
    """A square transposed convolution with SAME padding, `strides` times the input's height
    and width (compare_gan's deconv2d; kernel [k, k, filters, input channels])."""

    def __init__(self, filters: int, kernel_size: int, strides: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.filters, self.kernel_size, self.strides = filters, kernel_size, strides

    def build(self, input_shape: tf.TensorShape) -> None:
        size = self.kernel_size
        self.add_kernel([size, size, self.filters, int(input_shape[-1])], self.filters)
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        _, height, width, _ = inputs.shape
        shape = [tf.shape(inputs)[0], height * self.strides, width * self.strides, self.filters]
        outputs = tf.nn.conv2d_transpose(
            inputs, self.compute_kernel(training), shape, self.strides, "SAME"
        )
        return self.add_bias(outputs)


class Embedding(KernelLayer):
    """Rows of a [num_classes, dim] matrix by label: compare_gan's bias-free linear map of the
    one-hot label (embed_y, embedding_fc), spectrally normalised as that map if asked. Its
    weight is named "embeddings" (orthogonal regularisation skips it, as BigGAN's)."""

    def __init__(self, num_classes: int, dim: int, **kwargs):
        super().__init__(use_bias=False, **kwargs)
        self.num_classes, self.dim = num_classes, dim

    def build(self, input_shape: tf.TensorShape) -> None:
        self.add_kernel([self.num_classes, self.dim], self.dim, name="embeddings")
        super().build(input_shape)

    def call(self, labels: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        return tf.gather(self.compute_kernel(training), tf.cast(labels, tf.int32))


def batch_moments(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Mean and variance per channel (last axis) over the global batch: averaged over the
    replicas of the strategy in whose replica context it runs (equal replica batches)."""
    axes = list(range(x.shape.rank - 1))
    mean, mean_square = tf.reduce_mean(x, axes), tf.reduce_mean(tf.square(x), axes)
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        both = context.all_reduce(tf.distribute.ReduceOp.MEAN, tf.concat([mean, mean_square], 0))
        mean, mean_square = tf.split(both, 2)
    return mean, tf.nn.relu(mean_square - tf.square(mean))


class BatchStandardization(tf_keras.layers.Layer):
    """(x - mean) / std per channel without learned scale or offset (compare_gan's
    standardize_batch): global-batch moments in training, moving averages in inference."""

    def __init__(self, momentum: float = BN_MOMENTUM, epsilon: float = BN_EPSILON, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.epsilon = momentum, epsilon

    def build(self, input_shape: tf.TensorShape) -> None:
        def moving(name, initializer):
            return self.add_weight(
                name,
                [int(input_shape[-1])],
                initializer=initializer,
                trainable=False,
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.MEAN,
                experimental_autocast=False,
            )

        self.moving_mean = moving("moving_mean", "zeros")
        self.moving_variance = moving("moving_variance", "ones")
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        x = tf.cast(inputs, tf.float32)
        if training_flag(training):
            mean, variance = batch_moments(x)
            decay = 1.0 - self.momentum
            self.moving_mean.assign_sub((self.moving_mean - mean) * decay)
            self.moving_variance.assign_sub((self.moving_variance - variance) * decay)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        standard = (x - mean) * tf.math.rsqrt(variance + self.epsilon)
        return tf.cast(standard, self.compute_dtype)


class ConditionalBatchNorm(tf_keras.layers.Layer):
    """Batch norm whose gain (1 + W_g c) and offset (W_b c) are bias-free linear maps of a
    condition c per example (compare_gan's conditional_batch_norm; BigGAN's c is a chunk of z
    and the shared class embedding), spectrally normalised with the generator."""

    def __init__(self, channels: int, spectral_norm: bool, initializer: str, **kwargs):
        super().__init__(**kwargs)
        self.channels = channels
        self.standardize = BatchStandardization(name="standardize")
        linear = functools.partial(
            Dense, channels, use_bias=False, spectral_norm=spectral_norm, initializer=initializer
        )
        self.gain, self.offset = linear(name="gamma"), linear(name="beta")

    def call(
        self, inputs: tf.Tensor, condition: tf.Tensor, training: bool | None = None
    ) -> tf.Tensor:
        shape = [-1] + [1] * (inputs.shape.rank - 2) + [self.channels]
        gain = 1.0 + tf.reshape(self.gain(condition, training=training), shape)
        offset = tf.reshape(self.offset(condition, training=training), shape)
        return self.standardize(inputs, training=training) * gain + offset


class LayerNorm(tf_keras.layers.Layer):
    """Normalises each example over all its axes, then a learned scale and offset per channel
    (tf.contrib.layers.layer_norm's defaults, as compare_gan's layer_norm)."""

    def build(self, input_shape: tf.TensorShape) -> None:
        channels = [int(input_shape[-1])]
        self.gamma = self.add_weight("gamma", channels, initializer="ones")
        self.beta = self.add_weight("beta", channels, initializer="zeros")
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        x = tf.cast(inputs, tf.float32)
        mean, variance = tf.nn.moments(x, list(range(1, x.shape.rank)), keepdims=True)
        standard = tf.cast((x - mean) * tf.math.rsqrt(variance + LN_EPSILON), self.compute_dtype)
        return standard * self.gamma + self.beta


def batch_norm(name: str | None = None) -> tf_keras.layers.BatchNormalization:
    """Plain batch norm with a learned scale and offset, statistics over all replicas."""
    return tf_keras.layers.BatchNormalization(
        momentum=BN_MOMENTUM, epsilon=BN_EPSILON, synchronized=True, name=name
    )


def normalization(
    kind: str,
    channels: int,
    conditional: bool = False,
    spectral_norm: bool = False,
    initializer: str = "normal",
    name: str | None = None,
) -> tf_keras.layers.Layer | None:
    """The layer of normalisation `kind` ("batch", conditional if asked, or "layer"); None
    for "none" and "spectral" (which normalises the weights instead)."""
    if kind == "batch" and conditional:
        return ConditionalBatchNorm(channels, spectral_norm, initializer, name=name)
    if kind == "batch":
        return batch_norm(name)
    if kind == "layer":
        return LayerNorm(name=name)
    return None


def normalize(
    layer: tf_keras.layers.Layer | None,
    x: tf.Tensor,
    condition: tf.Tensor | None,
    training: bool | None,
) -> tf.Tensor:
    """`layer` (from `normalization`) applied to x: conditional BN takes the condition."""
    if layer is None:
        return x
    if isinstance(layer, ConditionalBatchNorm):
        return layer(x, condition, training=training)
    return layer(x, training=training)


def relu(x: tf.Tensor) -> tf.Tensor:
    """max(x, 0) as a Maximum op: grappler fuses conv + bias + residual add + a Relu op, then
    fails on the gradient's other use of the sum ("remapper failed: Mutation::Apply error"
    each trace) when the sum also feeds a shortcut conv."""
    return tf.maximum(x, tf.zeros([], x.dtype))


def unpool(x: tf.Tensor) -> tf.Tensor:
    """Doubles height and width by zero insertion (compare_gan's unpool): each value at the
    top left of its 2x2 cell, zeros elsewhere."""
    _, height, width, channels = x.shape
    x = tf.reshape(tf.stack([x, tf.zeros_like(x)], axis=3), [-1, height, 2 * width, channels])
    return tf.reshape(
        tf.stack([x, tf.zeros_like(x)], axis=2), [-1, 2 * height, 2 * width, channels]
    )


def upsample_nearest(x: tf.Tensor) -> tf.Tensor:
    """Doubles height and width by repeating each value (BigGAN's upsampling)."""
    return tf.repeat(tf.repeat(x, 2, axis=1), 2, axis=2)


def upsampler(name: str) -> Callable[[tf.Tensor], tf.Tensor]:
    return {"unpool": unpool, "nearest": upsample_nearest}[name]


def downsample(x: tf.Tensor) -> tf.Tensor:
    """2x2 average pooling, stride 2."""
    return tf.nn.avg_pool2d(x, 2, 2, "SAME")


class NonLocalBlock(tf_keras.layers.Layer):
    """SAGAN's self-attention (compare_gan's non_local_block): every position's query (C/8)
    attends over keys (C/8) and values (C/2) max-pooled 2x2; x + sigma * W_o(attended),
    sigma a learned scalar from 0. The 1x1 convolutions have no bias."""

    def __init__(self, channels: int, spectral_norm: bool, initializer: str, **kwargs):
        super().__init__(**kwargs)
        conv = functools.partial(Conv2D, kernel_size=1, use_bias=False, spectral_norm=spectral_norm)
        self.theta = conv(channels // 8, initializer=initializer, name="conv2d_theta")
        self.phi = conv(channels // 8, initializer=initializer, name="conv2d_phi")
        self.g = conv(channels // 2, initializer=initializer, name="conv2d_g")
        self.attended = conv(channels, initializer=initializer, name="conv2d_attn_g")

    def build(self, input_shape: tf.TensorShape) -> None:
        self.sigma = self.add_weight("sigma", [], initializer="zeros")
        super().build(input_shape)

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        _, height, width, _ = inputs.shape

        def pooled(layer):
            x = tf.nn.max_pool2d(layer(inputs, training=training), 2, 2, "VALID")
            return tf.reshape(x, [-1, x.shape[1] * x.shape[2], x.shape[3]])

        queries = self.theta(inputs, training=training)
        queries = tf.reshape(queries, [-1, height * width, queries.shape[-1]])
        weights = tf.nn.softmax(tf.matmul(queries, pooled(self.phi), transpose_b=True))
        values = pooled(self.g)
        attended = tf.reshape(tf.matmul(weights, values), [-1, height, width, values.shape[-1]])
        return inputs + self.sigma * self.attended(attended, training=training)


def attention_blocks(
    names: Sequence[str],
    channels: Sequence[int],
    wanted: Sequence[str],
    spectral_norm: bool,
    initializer: str,
) -> dict[str, NonLocalBlock]:
    """A non-local block for each block name in `wanted` (its output `channels`)."""
    return {
        name: NonLocalBlock(width, spectral_norm, initializer, name=f"non_local_{name}")
        for name, width in zip(names, channels, strict=True)
        if name in wanted
    }


class GeneratorBlock(tf_keras.layers.Layer):
    """Pre-activation residual block doubling the resolution (compare_gan's generator
    ResNetBlock): norm, ReLU, upsample, 3x3 conv, norm, ReLU, 3x3 conv; plus the upsampled
    input through a `shortcut_kernel` conv (3 in the SN-GAN ResNets, 1 in BigGAN)."""

    def __init__(
        self, in_channels: int, out_channels: int, spec: GanSpec, shortcut_kernel: int, **kwargs
    ):
        super().__init__(**kwargs)
        conv = functools.partial(
            Conv2D, spectral_norm=spec.g_spectral_norm, initializer=spec.initializer
        )
        norm = functools.partial(
            normalization,
            spec.g_normalization,
            conditional=spec.g_conditional_norm,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
        )
        self.norm1, self.conv1 = norm(in_channels, name="bn1"), conv(out_channels, 3, name="conv1")
        self.norm2, self.conv2 = norm(out_channels, name="bn2"), conv(out_channels, 3, name="conv2")
        self.shortcut = conv(out_channels, shortcut_kernel, name="conv_shortcut")
        self.upsample = upsampler(spec.upsampling)

    def call(
        self, inputs: tf.Tensor, condition: tf.Tensor | None = None, training: bool | None = None
    ) -> tf.Tensor:
        x = relu(normalize(self.norm1, inputs, condition, training))
        x = self.conv1(self.upsample(x), training=training)
        x = relu(normalize(self.norm2, x, condition, training))
        x = self.conv2(x, training=training)
        return x + self.shortcut(self.upsample(inputs), training=training)


class DiscriminatorBlock(tf_keras.layers.Layer):
    """Pre-activation residual block (compare_gan's discriminator ResNetBlock): norm, ReLU,
    3x3 conv, norm, ReLU, 3x3 conv, 2x2 average pool if `downsample`; plus the input through a
    `shortcut_kernel` conv (pooled likewise), or, without `conv_shortcut`, the input itself.

    The first block (`first`) has no ReLU before its first conv: compare_gan's images are in
    [0, 1], where that ReLU is the identity, ours in [-1, 1] (BigGAN's first block has none)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        spec: GanSpec,
        shortcut_kernel: int,
        downsample: bool,
        conv_shortcut: bool = True,
        first: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        conv = functools.partial(
            Conv2D, spectral_norm=spec.d_spectral_norm, initializer=spec.initializer
        )
        self.norm1 = normalization(spec.d_normalization, in_channels, name="norm1")
        self.conv1 = conv(out_channels, 3, name="conv1")
        self.norm2 = normalization(spec.d_normalization, out_channels, name="norm2")
        self.conv2 = conv(out_channels, 3, name="conv2")
        self.shortcut = (
            conv(out_channels, shortcut_kernel, name="conv_shortcut") if conv_shortcut else None
        )
        self.downsample, self.first = downsample, first

    def call(self, inputs: tf.Tensor, training: bool | None = None) -> tf.Tensor:
        x = normalize(self.norm1, inputs, None, training)
        x = self.conv1(x if self.first else relu(x), training=training)
        x = relu(normalize(self.norm2, x, None, training))
        x = self.conv2(x, training=training)
        shortcut = inputs if self.shortcut is None else self.shortcut(inputs, training=training)
        if self.downsample:
            x, shortcut = downsample(x), downsample(shortcut)
        return x + shortcut


def to_images(x: tf.Tensor) -> tf.Tensor:
    """The generator's output: tanh, in float32 whatever the compute dtype."""
    return tf.tanh(tf.cast(x, tf.float32))


def to_logits(x: tf.Tensor) -> tf.Tensor:
    """The discriminator's output: [B, 1] -> [B] float32 logits."""
    return tf.squeeze(tf.cast(x, tf.float32), axis=-1)


def class_vector(
    embedding: Embedding | None, labels: tf.Tensor | None, num_classes: int, training: bool | None
) -> tf.Tensor | None:
    """What the generator's norms see of the class: its shared embedding, else its one-hot
    vector; None when unconditional."""
    if num_classes == 0:
        return None
    if embedding is not None:
        return embedding(labels, training=training)
    return tf.one_hot(tf.cast(labels, tf.int32), num_classes)


def split_latent(
    noise: tf.Tensor, classes: tf.Tensor | None, num_blocks: int, hierarchical: bool
) -> tuple[tf.Tensor, list[tf.Tensor | None]]:
    """(the dense layer's z, each block's condition). Hierarchical (BigGAN): z's first of
    num_blocks + 1 equal chunks goes to the dense layer, chunk i + 1 with the class vector
    to block i; otherwise all of z to the dense layer and the class vector to every block."""
    if not hierarchical:
        return noise, [classes] * num_blocks
    first, *chunks = tf.split(noise, num_blocks + 1, axis=1)
    if classes is None:
        return first, chunks
    classes = tf.cast(classes, chunks[0].dtype)
    return first, [tf.concat([chunk, classes], axis=1) for chunk in chunks]


def projection(
    embedding: Embedding | None,
    labels: tf.Tensor | None,
    features: tf.Tensor,
    training: bool | None,
) -> tf.Tensor | float:
    """The projection discriminator's class term <embed(y), h> per example (Miyato & Koyama
    2018; compare_gan's project_y), [B, 1]; 0 when unconditional."""
    if embedding is None:
        return 0.0
    embedded = tf.cast(embedding(labels, training=training), features.dtype)
    return tf.reduce_sum(embedded * features, axis=1, keepdims=True)


def class_embedding(spec: GanSpec, width: int, initializer: str | None = None) -> Embedding | None:
    """The projection discriminator's class embedding of `width` (None when unconditional)."""
    if not spec.conditional:
        return None
    return Embedding(
        spec.num_classes,
        width,
        spectral_norm=spec.d_spectral_norm,
        initializer=initializer or spec.initializer,
        name="embedding_fc",
    )


SEED_SIZE = 4  # a residual generator's dense layer maps z to 4x4 features


def names(count: int) -> tuple[str, ...]:
    """Block names B1, B2, ... (what the attention settings name)."""
    return tuple(f"B{i + 1}" for i in range(count))


class ResidualGenerator(tf_keras.Model):
    """{"noise", "label"} -> tanh images of a residual generator (SN-GAN's ResNet, BigGAN): z
    (split over the blocks when hierarchical) to SEED_SIZE^2 x `seed_channels` by `fc_noise`,
    its `blocks` (self-attention after those `attention` names), `final_norm`, ReLU,
    `final_conv`. Subclasses build those layers."""

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> tf.Tensor:
        spec = self.spec
        classes = class_vector(self.embed_y, inputs.get("label"), spec.num_classes, training)
        z, conditions = split_latent(
            inputs["noise"], classes, len(self.blocks), spec.hierarchical_z
        )
        x = tf.reshape(
            self.fc_noise(z, training=training), [-1, SEED_SIZE, SEED_SIZE, self.seed_channels]
        )
        for name, block, condition in zip(self.names, self.blocks, conditions, strict=True):
            x = block(x, condition, training=training)
            if name in self.attention:
                x = self.attention[name](x, training=training)
        x = tf.nn.relu(normalize(self.final_norm, x, classes, training))
        return to_images(self.final_conv(x, training=training))


class ResidualDiscriminator(tf_keras.Model):
    """{"image", "label"} -> logits [B] of a residual discriminator (SN-GAN's ResNet, BigGAN):
    its `blocks` (self-attention after those `attention` names), ReLU, pooled over positions
    (`pool`: mean or sum), a dense logit plus the class projection."""

    def __init__(self, spec: GanSpec, pool: Callable, **kwargs):
        super().__init__(**kwargs)
        self.pool = pool
        self.final_fc = Dense(
            1, spectral_norm=spec.d_spectral_norm, initializer=spec.initializer, name="final_fc"
        )

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> tf.Tensor:
        x = inputs["image"]
        for name, block in zip(self.names, self.blocks, strict=True):
            x = block(x, training=training)
            if name in self.attention:
                x = self.attention[name](x, training=training)
        features = self.pool(relu(x), axis=[1, 2])
        logits = self.final_fc(features, training=training)
        logits += projection(self.embedding_fc, inputs.get("label"), features, training)
        return to_logits(logits)
