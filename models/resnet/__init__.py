"""ResNet v1.5 (He et al. 2015, with the stride on the 3x3 conv) on Model Garden's backbone."""
