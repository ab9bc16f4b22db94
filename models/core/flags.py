"""The command-line flags every model shares, defined once."""

import sys

from absl import flags

MODES = ("train", "eval", "train_and_eval", "continuous_eval", "export", "predict")
STRATEGIES = ("tpu", "mirrored", "multi_worker", "one_device")


def define_flags() -> None:
    """Defines the shared flags once and shows them in the running program's --help."""
    if "model_dir" not in flags.FLAGS:
        _define()
    for flag in flags.FLAGS.get_flags_for_module(__name__):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def _define() -> None:
    flags.DEFINE_string("model_dir", None, "Directory for checkpoints, summaries and records.")
    flags.DEFINE_string(
        "data_dir", None, "Directory of TFRecords in the dataset's schema. Default: built-in data."
    )
    flags.DEFINE_multi_string(
        "gin_file", [], "Gin recipe file; repeatable. Bare names resolve under configs/."
    )
    flags.DEFINE_multi_string(
        "gin_param", [], "Gin binding such as 'train.epochs = 5'; repeatable."
    )
    flags.DEFINE_multi_string("gin_bindings", [], "Alias of --gin_param.")
    flags.DEFINE_enum("mode", "train_and_eval", MODES, "What to run.")
    flags.DEFINE_string("image", None, "--mode=predict: the JPEG to run the model on.")
    flags.DEFINE_string(
        "input", None, "--mode=predict: a UTF-8 text file, one input a line (e.g. to translate)."
    )
    flags.DEFINE_string(
        "audio", None, "--mode=predict: a 16 kHz WAV file to transcribe (speech recognition)."
    )
    flags.DEFINE_integer(
        "num_images",
        None,
        "--mode=predict: how many images a generative model draws into the --output PNG grid.",
        lower_bound=1,
        upper_bound=1024,
    )
    flags.DEFINE_string(
        "output",
        None,
        "--mode=predict: the PNG to draw --image's prediction (or --num_images samples) into, "
        "or the text file for "
        "--input's predictions (default: stdout).",
    )
    flags.DEFINE_string("tpu", None, "TPU name, grpc://address, or 'local'. Implies TPUStrategy.")
    flags.DEFINE_string(
        "slice", None, "Device slice: cpu-N (N logical CPUs, mirrored), gpu-N, or a TPU slice name."
    )
    flags.DEFINE_enum("strategy", None, STRATEGIES, "Distribution strategy (default: inferred).")
    flags.DEFINE_enum("precision", "float32", ["float32", "bfloat16"], "Compute precision.")
    flags.DEFINE_integer(
        "seed", 0, "Random seed for weights and input order.", lower_bound=0, upper_bound=2**32 - 1
    )
    flags.DEFINE_integer(
        "steps",
        None,
        "Train this many steps, whatever length (train.steps, .epochs, .examples) the recipe sets.",
        lower_bound=1,
    )
    flags.DEFINE_float(
        "epochs",
        None,
        "Train this many epochs, whatever length the recipe sets.",
        lower_bound=0.0,
    )
    flags.DEFINE_string("target_metric", None, "Stop when this eval metric reaches --target_value.")
    flags.DEFINE_float("target_value", None, "Target for --target_metric (time-to-accuracy mode).")
    flags.DEFINE_string("profile_steps", None, "Profile steps 'START,END' into model_dir/profile.")
    flags.DEFINE_string(
        "recipe", None, "Recipe name recorded in run records (default: the gin file names)."
    )
    flags.DEFINE_list(
        "worker_hosts",
        None,
        "Multi-worker cluster HOST:PORT,HOST:PORT,... (writes TF_CONFIG; worker 0 is the chief).",
    )
    flags.DEFINE_integer("task_index", None, "This process's index in --worker_hosts.")
    flags.DEFINE_float(
        "cluster_timeout_s", 300.0, "Fail when the other workers are not up within this time."
    )
    flags.DEFINE_string(
        "tf_data_service",
        None,
        "grpc://HOST:PORT of a tf.data service dispatcher that runs the training input pipeline "
        "(python -m models.data.service starts one).",
    )
    flags.DEFINE_float(
        "tf_data_service_timeout_s",
        300.0,
        "End the run (exit 1, checkpoints kept) when the tf.data service dispatcher has not "
        "answered for this long; 0: wait for ever, as TensorFlow does.",
        lower_bound=0,
    )
