"""The Object Detection API's idea on Model Garden's modeling code: a detector composed in gin
from a meta-architecture, a feature extractor, a feature pyramid, a box predictor, anchors and
a loss."""
