"""Compare GAN (Kurach et al. 2019; Google's compare_gan): SNDCGAN, ResNet and BigGAN."""
