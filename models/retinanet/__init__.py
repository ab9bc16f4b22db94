"""RetinaNet (Lin et al. 2017): ResNet-FPN with focal loss, on Model Garden's modeling code."""
