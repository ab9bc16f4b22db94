"""Inception-v3 (Szegedy et al. 2015) from tf_keras.applications, with a logits head."""
