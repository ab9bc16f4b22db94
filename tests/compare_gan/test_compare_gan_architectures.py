"""Compare GAN's architectures: every architecture and normalisation at 32x32, spectral
normalisation (the largest singular value of the effective kernel goes to 1; the gradient flows
through sigma), batch statistics over replicas, and a training call under MirroredStrategy on
two of conftest.py's logical CPUs. BigGAN's full-size G and D counts against compare_gan's are
tests/test_models.py's, from the registered figures."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from models.compare_gan import layers
from models.compare_gan.model import compare_gan
from models.core import registry
from models.core.errors import UsageError
from models.core.strategy import build_strategy

BATCH = 4
SMALL = {"image_size": 32, "width": 8, "z_dim": 64}


@pytest.fixture(autouse=True)
def _fresh_keras():
    yield
    tf_keras.backend.clear_session()


def _inputs(pair, batch: int = BATCH) -> dict[str, tf.Tensor]:
    return {
        "noise": tf.random.stateless_normal([batch, pair.z_dim], seed=[1, 2]),
        "label": tf.range(batch, dtype=tf.int32) % max(pair.num_classes, 1),
    }


def _spectral_layers(pair) -> list[layers.KernelLayer]:
    found = [*pair.generator.submodules, *pair.discriminator.submodules]
    return [x for x in found if isinstance(x, layers.KernelLayer) and x.spectral_norm]


def _largest_singular_value(layer: layers.KernelLayer) -> float:
    kernel = layer.normalized_kernel(training=False).numpy()
    return float(np.linalg.svd(kernel.reshape(-1, kernel.shape[-1]), compute_uv=False)[0])


@pytest.mark.parametrize("num_classes", [0, 10])
@pytest.mark.parametrize("d_normalization", ["none", "batch", "layer", "spectral"])
@pytest.mark.parametrize("architecture", ["sndcgan", "resnet", "biggan"])
def test_every_architecture_and_normalization_builds(architecture, d_normalization, num_classes):
    pair = compare_gan(
        architecture, num_classes=num_classes, d_normalization=d_normalization, **SMALL
    )
    for training in (True, False):
        images = pair.generator(_inputs(pair), training=training)
        assert images.shape == (BATCH, 32, 32, 3)
        assert np.all(np.abs(images.numpy()) <= 1.0)
        logits = pair.discriminator(
            {"image": images, "label": _inputs(pair)["label"]}, training=training
        )
        assert logits.shape == (BATCH,)
        assert np.all(np.isfinite(logits.numpy()))


@pytest.mark.parametrize("architecture", ["sndcgan", "resnet", "biggan"])
def test_generator_without_normalization_and_one_channel(architecture):
    pair = compare_gan(architecture, g_normalization="none", channels=1, num_classes=3, **SMALL)
    images = pair.generator(_inputs(pair), training=True)
    assert images.shape == (BATCH, 32, 32, 1)
    assert pair.discriminator({"image": images, "label": tf.zeros([BATCH], tf.int32)}).shape == (
        BATCH,
    )


def test_conditional_generator_depends_on_the_label():
    pair = compare_gan("biggan", num_classes=10, initializer="normal", **SMALL)
    inputs = _inputs(pair)
    other = {**inputs, "label": (inputs["label"] + 1) % 10}
    images = pair.generator(inputs, training=False)
    assert not np.allclose(images, pair.generator(other, training=False))


def test_unconditional_generator_ignores_the_label():
    pair = compare_gan("biggan", num_classes=0, **SMALL)
    inputs = _inputs(pair)
    images = pair.generator(inputs, training=False)
    np.testing.assert_allclose(images, pair.generator({**inputs, "label": inputs["label"] + 3}))


def test_spectral_norm_drives_the_largest_singular_value_to_one():
    conv = layers.Conv2D(32, 3, spectral_norm=True)
    x = tf.random.normal([2, 8, 8, 16])
    conv(x)
    rng = np.random.default_rng(0)  # a fixed kernel: its singular values' gap sets the pace
    conv.kernel.assign(rng.normal(0, 0.02, conv.kernel.shape).astype(np.float32))
    for _ in range(200):
        conv(x, training=True)
    assert _largest_singular_value(conv) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("architecture", ["sndcgan", "resnet", "biggan"])
def test_spectral_norm_of_every_layer(architecture):
    tf_keras.utils.set_random_seed(0)  # the kernels, whose singular values' gaps set the pace
    pair = compare_gan(
        architecture, num_classes=10, initializer="normal", g_spectral_norm=True, **SMALL
    )
    spectral = _spectral_layers(pair)
    images = pair.generator(_inputs(pair), training=True)  # a training call saves u
    pair.discriminator({"image": images, "label": _inputs(pair)["label"]}, training=True)
    iterate = tf.function(lambda: [layer.normalized_kernel(training=True) for layer in spectral])
    for _ in range(300):  # the same power iteration, without the convolutions around it
        iterate()
    for layer in spectral:
        assert _largest_singular_value(layer) == pytest.approx(1.0, abs=1e-2), layer.name


def test_spectral_norm_updates_u_only_in_training():
    pair = compare_gan("biggan", num_classes=10, **SMALL)
    layer = _spectral_layers(pair)[0]
    before = layer.u.numpy()
    pair.generator(_inputs(pair), training=False)
    np.testing.assert_array_equal(layer.u.numpy(), before)
    pair.generator(_inputs(pair), training=True)
    assert not np.allclose(layer.u.numpy(), before)


def test_spectral_norm_gradient_flows_through_sigma():
    # W / sigma(W) does not change when W is scaled, so <dLoss/dW, W> = 0 only if the
    # gradient flows through sigma (u and v fixed, sigma = u^T W v is linear in W).
    tf.random.set_seed(1)
    dense = layers.Dense(5, spectral_norm=True, use_bias=False)
    x = tf.random.normal([3, 7])
    dense(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sin(dense(x, training=False)))
    gradient = tape.gradient(loss, dense.kernel)
    assert float(tf.reduce_sum(gradient * dense.kernel)) == pytest.approx(0.0, abs=1e-5)
    assert float(tf.norm(gradient)) > 1e-3


def test_spectral_norm_vectors_and_statistics_are_not_trainable():
    pair = compare_gan("biggan", num_classes=10, d_normalization="batch", **SMALL)
    names = [v.name for v in pair.trainable_variables]
    assert not [n for n in names if "/u:" in n or "moving_" in n]
    assert any("/u:" in v.name for v in pair.non_trainable_variables)


def test_unpool_inserts_zeros():
    x = tf.reshape(tf.range(1.0, 5.0), [1, 2, 2, 1])
    expected = [[1, 0, 2, 0], [0, 0, 0, 0], [3, 0, 4, 0], [0, 0, 0, 0]]
    np.testing.assert_array_equal(layers.unpool(x)[0, :, :, 0], expected)


def _two_cpus() -> tf.distribute.Strategy:
    """The zoo's cpu-2 slice: MirroredStrategy on two of tests/conftest.py's logical CPUs."""
    return build_strategy(slice_name="cpu-2")


def test_batch_moments_span_the_replicas():
    strategy = _two_cpus()
    data = tf.reshape(tf.range(16.0), [8, 2])  # replica 0 gets rows 0-3, replica 1 rows 4-7
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(8)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    moments = tf.function(lambda x: strategy.run(layers.batch_moments, (x,)))(batch)
    for mean, variance in zip(*map(strategy.experimental_local_results, moments), strict=True):
        np.testing.assert_allclose(mean, data.numpy().mean(0), rtol=1e-6)
        np.testing.assert_allclose(variance, data.numpy().var(0), rtol=1e-5)


@pytest.mark.parametrize(
    ("architecture", "d_normalization"), [("biggan", "spectral"), ("sndcgan", "batch")]
)
@pytest.mark.slow
def test_training_call_under_mirrored_strategy(architecture, d_normalization):
    # Spectral norm in G and D (BigGAN), or in G with Keras' synchronised BN in D (SNDCGAN);
    # conditional BN in G in both.
    strategy = _two_cpus()
    with strategy.scope():
        pair = compare_gan(
            architecture,
            num_classes=10,
            d_normalization=d_normalization,
            g_spectral_norm=True,
            **SMALL,
        )
    spectral = _spectral_layers(pair)
    before = [layer.u.numpy() for layer in spectral]

    @tf.function
    def step(noise, labels):
        def replica(noise, labels):
            with tf.GradientTape() as tape:
                images = pair.generator({"noise": noise, "label": labels}, training=True)
                logits = pair.discriminator({"image": images, "label": labels}, training=True)
                loss = tf.reduce_mean(tf.nn.softplus(-logits))
            variables = pair.generator.trainable_variables
            gradients = tape.gradient(loss, variables)
            return loss, tf.add_n([tf.reduce_sum(tf.square(g)) for g in gradients])

        return strategy.run(replica, (noise, labels))

    losses, norms = step(tf.random.normal([BATCH, SMALL["z_dim"]]), tf.range(BATCH) % 10)
    for value in (
        *strategy.experimental_local_results(losses),
        *strategy.experimental_local_results(norms),
    ):
        assert np.isfinite(value.numpy())
    for layer, old in zip(spectral, before, strict=True):
        copies = [v.numpy() for v in strategy.experimental_local_results(layer.u)]
        np.testing.assert_array_equal(copies[0], copies[1])  # mirrored from the first replica
        assert not np.allclose(copies[0], old)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"architecture": "stylegan"}, "compare_gan.architecture"),
        ({"d_normalization": "weight"}, "compare_gan.d_normalization"),
        ({"g_normalization": "layer"}, "compare_gan.g_normalization"),
        ({"architecture": "biggan", "image_size": 48}, "biggan supports 32, 64"),
        ({"architecture": "resnet", "image_size": 64}, "resnet supports 32"),
        ({"architecture": "sndcgan", "image_size": 36}, "multiple of 8"),
        ({"architecture": "sndcgan", "hierarchical_z": True}, "no blocks to split z"),
        ({"architecture": "biggan", "g_attention": "B9"}, "B9 is not a block"),
        ({"architecture": "biggan", "image_size": 64, "z_dim": 128}, "5 equal chunks"),
        ({"initializer": "zeros"}, "compare_gan.initializer"),
        ({"num_classes": -1}, "num_classes"),
        ({"d_width": 0}, "compare_gan.d_width = 0"),
    ],
)
def test_bad_arguments_are_usage_errors(arguments, message):
    with pytest.raises(UsageError, match=message):
        compare_gan(**{"width": 8, **arguments})


def test_variants_are_registered_for_image_generation():
    names = registry.list_models("compare_gan")
    assert {"biggan_128", "biggan_256", "biggan_32", "sndcgan_32", "sngan_resnet_32"} <= set(names)
    for name in names:
        entry = registry.model_entry(name)
        assert entry.task == "ImageGenerationTask"
        assert entry.image_size == entry.fixed["image_size"]
    with pytest.raises(UsageError, match="fixes image_size"):
        registry.create_model("biggan_32", image_size=64)


@pytest.mark.parametrize("name", ["biggan_32", "sndcgan_32", "sngan_resnet_32"])
def test_small_variants_generate_digits_sized_images(name):
    pair = registry.create_model(name, num_classes=10)
    assert (pair.image_size, pair.num_classes) == (32, 10)
    images = pair.generator(_inputs(pair, 2), training=True)
    assert images.shape == (2, 32, 32, 3)


@pytest.mark.parametrize("architecture", ["sndcgan", "resnet", "biggan"])
def test_d_width_widens_the_discriminator_only(architecture):
    def counts(**widths):
        pair = compare_gan(architecture=architecture, **SMALL, **widths, initializer="normal")
        return [
            registry.count_parameters(m, "trainable") for m in (pair.generator, pair.discriminator)
        ]

    same, wider = counts(), counts(d_width=16)
    assert counts(d_width=8) == same  # None and the width itself are the same network
    assert wider[0] == same[0] and wider[1] > 2 * same[1]
