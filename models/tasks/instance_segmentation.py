"""Instance segmentation and two-stage detection on the shared COCO-schema pipeline: Mask R-CNN
(without its mask branch, Faster R-CNN) trained with Model Garden's RPN, Fast R-CNN and mask
losses as its MaskRCNNTask composes them; COCO box and mask AP out of the graph."""

from __future__ import annotations

from collections.abc import Sequence

import gin
import tensorflow as tf
from official.vision.configs import maskrcnn as maskrcnn_config
from official.vision.tasks import maskrcnn as maskrcnn_task

from models.core import registry
from models.core.errors import UsageError
from models.core.task import Models
from models.data.detection import DetectionInput, RcnnTargets
from models.tasks.coco_detection import CocoDetectionTask

_LOSSES = ("rpn_score_loss", "rpn_box_loss", "frcnn_cls_loss", "frcnn_box_loss", "mask_loss")


@gin.configurable
class InstanceSegmentationTask(CocoDetectionTask):
    """Mask R-CNN's training objective (He et al. 2017): the RPN's objectness (binary cross
    entropy over the sampled anchors) and box (Huber) losses, the box head's class (softmax
    cross entropy over the sampled ROIs) and box (Huber, positives) losses, and the mask head's
    per-pixel binary cross entropy on the positives' own class, summed with the `*_weight`s,
    plus L2 from `weight_decay.rate`. Evaluation runs the model's NMS and mask head and scores
    boxes and masks with pycocotools (AP, ..., mask_AP, ...).

    `model` is the registered variant (`run.model = "mask_rcnn_resnet50_fpn"`); `include_mask`
    is the variant's unless set (False: Faster R-CNN, box AP only). Defaults: Model Garden's
    maskrcnn_resnetfpn_coco.
    """

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        include_mask: bool | None = None,
        mask_crop_size: int = 112,
        rpn_huber_loss_delta: float = 1.0 / 9.0,
        frcnn_huber_loss_delta: float = 1.0,
        rpn_score_weight: float = 1.0,
        rpn_box_weight: float = 1.0,
        frcnn_class_weight: float = 1.0,
        frcnn_box_weight: float = 1.0,
        mask_weight: float = 1.0,
        draw_score_threshold: float = 0.5,
    ):
        entry = registry.model_entry(model)
        self.include_mask = _variant_masks(entry) if include_mask is None else include_mask
        targets = RcnnTargets(include_mask=self.include_mask, mask_crop_size=mask_crop_size)
        data = DetectionInput(data_dir=data_dir, rcnn=targets, anchors=entry.anchors)
        super().__init__(model, data, seed, draw_score_threshold)
        self.loss_settings = maskrcnn_config.Losses(
            rpn_huber_loss_delta=rpn_huber_loss_delta,
            frcnn_huber_loss_delta=frcnn_huber_loss_delta,
            rpn_score_weight=rpn_score_weight,
            rpn_box_weight=rpn_box_weight,
            frcnn_class_weight=frcnn_class_weight,
            frcnn_box_weight=frcnn_box_weight,
            mask_weight=mask_weight,
        )
        self.objective: maskrcnn_task.MaskRCNNTask | None = None

    def build_models(self) -> Models:
        size, classes = self.input.image_size, self.input.num_classes
        model = registry.create_model(
            self.model, num_classes=classes, image_size=size, include_mask=self.include_mask
        )
        self.objective = self._objective(model)
        return {"model": model}

    def _objective(self, model) -> maskrcnn_task.MaskRCNNTask:
        """Model Garden's losses for `model`: one box per ROI or one per class, as it has."""
        agnostic = bool(model.get_config()["class_agnostic_bbox_pred"])
        network = maskrcnn_config.MaskRCNN(
            include_mask=self.include_mask,
            detection_head=maskrcnn_config.DetectionHead(class_agnostic_bbox_pred=agnostic),
        )
        return maskrcnn_task.MaskRCNNTask(
            maskrcnn_config.MaskRCNNTask(model=network, losses=self.loss_settings)
        )

    def validate_data(self, splits: Sequence[str]) -> None:
        """The input's checks, and for mask AP the instances JSON of every evaluated split."""
        super().validate_data(splits)
        for split in splits:
            if self.include_mask and split != "train" and not self.input.annotation_file(split):
                raise UsageError(
                    f"mask AP needs instances_{split}.json beside the {split} shards in "
                    f"{self.input.data_dir} (`python -m models.data.convert.coco` writes it)"
                )

    # ------------------------------------------------------------------ training

    def losses(self, outputs: dict, labels: dict) -> dict[str, tf.Tensor]:
        """Model Garden's weighted sum (`model_loss`) and its terms for one replica's batch;
        `mask_loss` is 0 without masks."""
        terms = self.objective.build_losses(outputs, labels)
        return {"model_loss": terms["model_loss"], **{key: terms[key] for key in _LOSSES}}

    def training_inputs(self, labels: dict) -> dict[str, tf.Tensor]:
        """The model's training inputs beside the images: anchors, image sizes, padded boxes,
        classes and (Mask R-CNN) box-cropped masks."""
        names = ("anchor_boxes", "gt_boxes", "gt_classes") + (
            ("gt_masks",) if self.include_mask else ()
        )
        return {"image_shape": labels["image_info"][:, 1, :]} | {n: labels[n] for n in names}


def _variant_masks(entry: registry.ModelEntry) -> bool:
    """Whether the registered variant predicts masks (Mask R-CNN) or not (Faster R-CNN)."""
    return bool(entry.fixed.get("include_mask", True))
