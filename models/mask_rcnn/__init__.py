"""Mask R-CNN (He et al. 2017) and Faster R-CNN: two-stage ResNet-FPN detectors, on Model
Garden's modeling code."""
