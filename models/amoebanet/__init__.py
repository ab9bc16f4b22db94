"""AmoebaNet-D (Real et al. 2019, arXiv 1802.01548), the Cloud TPU reference's cell."""
