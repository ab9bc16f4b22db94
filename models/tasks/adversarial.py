"""A generative adversarial network as one registry model: the generator and the discriminator,
which the image-generation task trains as two models with two optimisers.

Conventions every GAN family follows (DCGAN, Compare GAN, BigGAN):

- generator({"noise": float [B, z_dim], "label": int32 [B]}) -> images float [B, H, W, C] in
  [-1, 1] (tanh); the label is ignored when `num_classes` is 0 (unconditional).
- discriminator({"image": float [B, H, W, C], "label": int32 [B]}) -> logits float [B].
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras


class AdversarialPair(tf_keras.Model):
    """`generator` and `discriminator` of one GAN; calling the pair generates images."""

    def __init__(
        self,
        generator: tf_keras.Model,
        discriminator: tf_keras.Model,
        z_dim: int,
        num_classes: int,
        image_size: int,
        channels: int = 3,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.generator, self.discriminator = generator, discriminator
        self.z_dim, self.num_classes = z_dim, num_classes
        self.image_size, self.channels = image_size, channels

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        return self.generator(inputs, training=training)

    def example_inputs(self, batch_size: int = 2) -> dict[str, tf.Tensor]:
        """Zero noise and class-0 labels of one batch (to build the pair's variables)."""
        return {
            "noise": tf.zeros([batch_size, self.z_dim]),
            "label": tf.zeros([batch_size], tf.int32),
        }

    def example_spec(self) -> dict[str, tf.TensorSpec]:
        """One noise vector and class (batch 1), for FLOPs counts."""
        return {
            "noise": tf.TensorSpec([1, self.z_dim], tf.float32),
            "label": tf.TensorSpec([1], tf.int32),
        }

    def build_both(self, batch_size: int = 2) -> AdversarialPair:
        """Creates both networks' variables by running one example batch through them."""
        inputs = self.example_inputs(batch_size)
        images = self.generator(inputs, training=False)
        self.discriminator({"image": images, "label": inputs["label"]}, training=False)
        self(inputs, training=False)
        return self
