"""Every family's memorisation check (tests/memorisation.py): its default recipe, and BERT's
fine-tuning recipes, on one batch of its built-in data. Each threshold stands beside the metric's
value for the untrained model on the same batch (`untrained`: one evaluation after a step at
learning rate 0, 2026-12-07, 2-core VM), so the table shows what each check proves."""

from __future__ import annotations

from memorisation import Memorise

CLASSIFIER = dict(data="digits", examples=16, metric="top_1_accuracy", threshold=1.0)
NO_AUGMENTATION = ("classification_input.augmentation = 'none'",)
# Fine-tuning memorises at its recipe's peak learning rate (not scaled down to the small batch),
# held constant: decayed to zero over a few hundred steps, it stops short.
CONSTANT_RATE = ("learning_rate.base_batch_size = None", "learning_rate.decay = 'constant'")
# SQuAD's ceiling on its first 8 built-in questions is F1 0.875: one answer (27 tokens) starts in
# the overlap of its context's two windows, and run_squad's decoding takes a span's start only
# from the window where that token has the most context, which does not hold the answer's end.
SQUAD_CEILING = 0.875
# Detectors: half their recipes' peak rate after a longer warmup (at the peak, RetinaNet's loss
# jumped to 50 in its first steps), held constant, and BN statistics that follow in ~10 steps
# (at the recipes' 0.99, evaluation lagged training: box AP 0.52-0.86 at step 300).
SCENES = (
    "detection_input.aug_scale_min = 1.0",
    "detection_input.aug_scale_max = 1.0",
    "learning_rate.base_lr = 0.02",
    *CONSTANT_RATE,
)
# Detectors train on one replica (evaluation still runs on cpu-2, tests/memorisation.py): on
# two, each replica's BN statistics are of one or two scenes, and whether AP reached 0.9 hung
# on the CPU's numerics. On an AMD EPYC VM (no AVX-512, 2026-12-07) SSD's box AP stalled at
# 0.834 from step 160 with its loss at 0.003, RetinaNet's peaked at 0.893, the code before
# and after spine v3 alike; on one replica both passed (98 s, 86 s).
DETECTOR = dict(
    data="digit_scenes",
    examples=2,
    metric="AP",
    threshold=0.9,
    steps=400,
    every=40,
    warmup=20,
    slice="cpu-1",
)
# Mask R-CNN trains on one replica: on cpu-2, one or two scenes a replica, box AP stalled at
# 0.83 and mask AP at 0.44 by step 400 (per-replica BN statistics); on one replica, 2 scenes
# reached box AP 0.87 and mask AP 0.64 at step 120 (4 scenes: 0.91 and 0.63 at step 280; masks
# of thin strokes, 28x28 per box, pasted back into the scene). Its evaluation runs on cpu-2
# (`--mode=eval --slice=cpu-2`, tests/memorisation.py).
GAN = dict(data="digits", metric="fid_digits", loss=None, steps=300, every=25)
# GANs memorise at 2.5x their recipes' learning rates (2e-4): DCGAN reached FID 13 at step 100
# (at 2e-4: step 200), Compare GAN 13 at step 75 (at 2e-4: 150-300; 1e-3 also held, 2026-12-07).
GAN_RATE = "learning_rate.base_lr = 5e-4"

CHECKS = [
    Memorise(
        "resnet",
        **CLASSIFIER,
        untrained=0.0625,
        params=NO_AUGMENTATION,
        train_breakage="classification_labels_shuffled",
    ),
    Memorise("mobilenet", **CLASSIFIER, untrained=0.0625, params=NO_AUGMENTATION),
    Memorise("efficientnet", **CLASSIFIER, untrained=0.25, params=NO_AUGMENTATION),
    Memorise("inception", **CLASSIFIER, untrained=0.25, params=NO_AUGMENTATION),
    Memorise("mnasnet", **CLASSIFIER, untrained=0.0625, params=NO_AUGMENTATION),
    Memorise("amoebanet", **CLASSIFIER, untrained=0.25, params=NO_AUGMENTATION),
    Memorise(
        "retinanet",
        **{**DETECTOR, "examples": 4},  # with one scene per replica, BN statistics diverged
        untrained=0.0,
        params=(*SCENES, "retinanet.norm_momentum = 0.9"),
        eval_breakage="detection_classes_off_by_one",
    ),
    Memorise(
        "object_detection",
        **DETECTOR,
        untrained=0.0,
        params=(*SCENES, "ssd.norm_momentum = 0.9"),
    ),
    Memorise(
        "mask_rcnn",
        **{**DETECTOR, "threshold": 0.85},
        untrained=0.005,
        also=(("mask_AP", 0.5),),
        params=(*SCENES, "mask_rcnn.norm_momentum = 0.9", "mask_rcnn.num_sampled_masks = 32"),
        eval_breakage="instance_masks_shifted",
    ),
    Memorise(
        "deeplab",
        "digit_scenes_voc",
        4,
        "mean_iou",
        0.9,
        untrained=0.0,
        every=20,
        params=(
            "segmentation_input.aug_scale_min = 1.0",
            "segmentation_input.aug_scale_max = 1.0",
            "segmentation_input.crop_size = (128, 128)",
        ),
        eval_breakage="segmentation_classes_off_by_one",
    ),
    Memorise(
        "bert",
        "python_docs",
        16,
        "masked_lm_accuracy",
        0.9,
        untrained=0.0,
        train_breakage="masked_tokens_shuffled",
        fails_within=160,  # healthy: 0.94 at step 120 on cpu-2 (2026-12-07)
    ),
    Memorise(
        "bert",
        "wordnet_glosses",
        16,
        "accuracy",
        0.9,  # 15 of 16
        untrained=0.25,
        steps=300,  # from the memorised pretraining run: 0.94 at step 190 (2026-12-07)
        recipe="bert/glosses.gin",
        params=CONSTANT_RATE,
        train_breakage="sentence_labels_shuffled",
        fails_within=200,
    ),
    Memorise(
        "bert",
        "wordnet_qa",
        8,
        "f1",
        0.85,  # the ceiling is 0.875: see SQUAD_CEILING
        untrained=0.166,
        recipe="bert/squad.gin",
        # The built-in vocabulary spells WordNet's words in pieces of a letter or two: the first
        # question's answer is 47 tokens, over run_squad's default longest answer of 30.
        params=(*CONSTANT_RATE, "QuestionAnsweringTask.max_answer_length = 64"),
    ),
    Memorise(
        "transformer",
        "pg_messages",
        16,
        "bleu",
        90.0,
        untrained=0.0,
        every=20,  # each evaluation is a beam search
        train_breakage="translation_targets_shuffled",
        fails_within=120,  # healthy: BLEU 92.8 at step 70
    ),
    Memorise(
        "asr_transformer",
        "spoken_wordnet",
        8,
        "wer",
        0.05,
        untrained=1.0,
        steps=300,
        every=25,  # each evaluation is a beam search
        params=("spec_augment.freq_masks = 0", "spec_augment.time_masks = 0"),
        train_breakage="transcripts_shuffled",
        fails_within=300,
    ),
    Memorise(
        "dcgan",
        **GAN,
        examples=64,
        threshold=20.0,
        untrained=123.9,
        params=(GAN_RATE,),
        train_breakage="generator_loss_sign_flipped",
        fails_within=150,  # healthy: FID 13 at step 100; broken: 89-90 at 50-150
    ),
    Memorise(
        "compare_gan",
        **GAN,
        examples=64,
        threshold=20.0,
        untrained=89.0,
        # half the default's channels (0.55 s a step at 16); both networks' rates (G and D)
        params=(
            "compare_gan.width = 8",
            *(f"{net}/{GAN_RATE}" for net in ("generator", "discriminator")),
        ),
    ),
]
BY_NAME = {spec.name: spec for spec in CHECKS}
