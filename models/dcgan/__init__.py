"""DCGAN (Radford et al. 2016): the all-convolutional GAN, trained on the built-in digits."""
