"""MnasNet-A1 and -B1 (Tan et al. 2019, arXiv 1807.11626) on Model Garden's inverted bottleneck."""
