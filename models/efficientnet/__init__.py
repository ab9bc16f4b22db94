"""EfficientNet B0-B7 (Tan & Le 2019, arXiv 1905.11946) on Model Garden's backbone."""
