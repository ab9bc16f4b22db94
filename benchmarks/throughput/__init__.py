"""Training throughput and MFU of a recipe, against Model Garden's own trainer where it has one.

python -m benchmarks.throughput --recipe=resnet/resnet50_imagenet [--model=resnet101] \
    --batch=32 --precision=bfloat16 [--steps=N --warmup_steps=M] [--input_only] [--json]

cli: the command; ours: the recipe's task and core Trainer on the task's synthetic input;
anchors: Model Garden's resnet_imagenet / retinanet_resnetfpn_coco matched to it; input: the two
input pipelines alone; measure: FLOPs, matmul peak, timers; render: the tables for people.
"""
