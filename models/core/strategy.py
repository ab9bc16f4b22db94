"""Builds the tf.distribute strategy from --tpu / --strategy / --slice."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import gin
import tensorflow as tf

from models.core.cluster import multi_worker_strategy
from models.core.errors import UsageError, first_line
from models.core.gin_types import check_field_types
from models.core.ports import check_reachable, split_address

_DEVICE_SLICE = re.compile(r"^(cpu|gpu)-(\d+)$")
_TPU_SLICE = re.compile(r"^v(\d+)[a-z]*-(\d+)$")
# A simulated slice splits the host CPU into logical devices; TensorFlow creates them one by
# one at start-up and took minutes (silently) for --slice=cpu-100000.
MAX_SIMULATED_CPUS = 64


def parse_slice(name: str) -> tuple[str, int]:
    """'cpu-4' -> ('cpu', 4); 'v3-32' -> ('tpu', 32). Raises UsageError on anything else."""
    match = _DEVICE_SLICE.match(name) or _TPU_SLICE.match(name)
    if not match:
        raise UsageError(f"--slice={name}: expected cpu-N, gpu-N or a TPU slice such as v3-32")
    kind = match.group(1) if match.re is _DEVICE_SLICE else "tpu"
    count = int(match.group(2))
    if count < 1:
        raise UsageError(f"--slice={name}: the device count must be at least 1")
    return kind, count


def _cpu_slice(count: int) -> tf.distribute.Strategy:
    """N logical CPU devices mirrored: real multi-replica semantics on one host."""
    if count > MAX_SIMULATED_CPUS:
        raise UsageError(
            f"--slice=cpu-{count}: a simulated CPU slice has at most {MAX_SIMULATED_CPUS} "
            "replicas (logical devices of this host)"
        )
    cpu = tf.config.list_physical_devices("CPU")[0]
    if tf.config.get_logical_device_configuration(cpu) is None:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
            )
        except RuntimeError as error:
            raise UsageError(f"--slice=cpu-{count}: TensorFlow was already initialised") from error
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(devices) < count:
        raise UsageError(f"--slice=cpu-{count}: only {len(devices)} logical CPUs were configured")
    if count == 1:
        return tf.distribute.OneDeviceStrategy(devices[0])
    return tf.distribute.MirroredStrategy(
        devices[:count], cross_device_ops=tf.distribute.ReductionToOneDevice()
    )


def _gpu_slice(count: int) -> tf.distribute.Strategy:
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) < count:
        raise UsageError(f"--slice=gpu-{count}: this machine has {len(gpus)} GPU(s)")
    return tf.distribute.MirroredStrategy([d.name for d in gpus[:count]])


def _on_google_cloud() -> bool:
    product = Path("/sys/class/dmi/id/product_name")
    return product.exists() and "Google" in product.read_text(errors="ignore")


def _check_tpu_reachable(tpu: str) -> None:
    """Fails fast, with one line, where no TPU can be reached, instead of hanging in gRPC."""
    if tpu == "local":
        if not any(Path("/dev").glob("accel*")) and not Path("/dev/vfio").exists():
            raise UsageError("--tpu=local: no TPU device on this host (no /dev/accel*)")
        return
    if tpu.startswith("grpc://"):
        owner = f"--tpu={tpu}: no TPU reachable"
        check_reachable(*split_address(tpu, f"--tpu={tpu}"), owner, timeout_s=5.0)
        return
    if not _on_google_cloud():
        raise UsageError(
            f"--tpu={tpu}: no TPU reachable: TPU names resolve only on Google Cloud "
            "(use grpc://HOST:PORT or run on the TPU VM with --tpu=local)"
        )


@gin.configurable("tpu")
@dataclass(frozen=True)
class TpuSettings:
    """How replicas map onto TPU cores: `tpu.cores_per_replica = 2` gives each replica two
    cores (a model split over them); a slice's cores = replicas x cores per replica."""

    cores_per_replica: int = 1

    def __post_init__(self):
        check_field_types(self, "tpu")

    def device_assignment(self, topology) -> tf.tpu.experimental.DeviceAssignment | None:
        """None (one core per replica), else replicas of cores_per_replica cores each: the
        cores of one chip first, then chips along the torus's x and y axes."""
        cores = self.cores_per_replica
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise UsageError(f"tpu.cores_per_replica={cores!r}: expected a whole number >= 1")
        if cores == 1:
            return None
        mesh, total = topology.mesh_shape, topology.num_tasks * topology.num_tpus_per_task
        per_chip, chips = mesh[-1], max(cores // mesh[-1], 1)
        x = min(chips, mesh[0])
        fits = (cores % per_chip == 0 or per_chip % cores == 0) and chips % x == 0
        if not fits or total % cores or chips // x > mesh[1]:
            raise UsageError(
                f"tpu.cores_per_replica={cores} does not tile this TPU ({total} cores, "
                f"mesh {list(mesh)})"
            )
        shape = [x, chips // x, 1, min(cores, per_chip)]
        return tf.tpu.experimental.DeviceAssignment.build(
            topology, computation_shape=shape, num_replicas=total // cores
        )


def tpu_strategy(tpu: str) -> tf.distribute.Strategy:
    """TPUClusterResolver + TPUStrategy; with no TPU reachable, one clear error."""
    _check_tpu_reachable(tpu)
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        topology = tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as error:  # noqa: BLE001 - the resolver raises many kinds
        raise UsageError(f"--tpu={tpu}: cannot connect to the TPU: {first_line(error)}") from None
    assignment = TpuSettings().device_assignment(topology)
    return tf.distribute.TPUStrategy(resolver, experimental_device_assignment=assignment)


def build_strategy(
    tpu: str | None = None,
    strategy: str | None = None,
    slice_name: str | None = None,
    cluster_timeout_s: float = 300.0,
) -> tf.distribute.Strategy:
    """The strategy the flags ask for; default: multi-worker when TF_CONFIG names a cluster,
    else one device (the first GPU, else the CPU)."""
    if tpu or strategy == "tpu":
        return tpu_strategy(tpu or "local")
    if slice_name:
        kind, count = parse_slice(slice_name)
        if kind == "tpu":
            raise UsageError(f"--slice={slice_name} is a TPU slice: pass --tpu as well")
        _check_strategy_fits_slice(strategy, slice_name, count)
        return _cpu_slice(count) if kind == "cpu" else _gpu_slice(count)
    if strategy == "multi_worker" or (strategy is None and os.environ.get("TF_CONFIG")):
        return multi_worker_strategy(cluster_timeout_s)
    if strategy == "mirrored":
        return tf.distribute.MirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


def _check_strategy_fits_slice(strategy: str | None, slice_name: str, count: int) -> None:
    """A cpu-N/gpu-N slice mirrors over its devices: --strategy may only agree with that."""
    fits = strategy in (None, "mirrored") or (strategy == "one_device" and count == 1)
    if not fits:
        raise UsageError(
            f"--strategy={strategy} contradicts --slice={slice_name} (a {count}-device "
            "mirrored slice); drop one of the two flags"
        )


def check_slice_matches(slice_name: str | None, strategy: tf.distribute.Strategy) -> None:
    """A TPU slice name given with --tpu must match the cores found: replicas x cores per
    replica (tpu.cores_per_replica)."""
    if not slice_name or parse_slice(slice_name)[0] != "tpu":
        return
    expected, per_replica = parse_slice(slice_name)[1], TpuSettings().cores_per_replica
    found = strategy.num_replicas_in_sync * per_replica
    if expected != found:
        raise UsageError(
            f"--slice={slice_name} expects {expected} cores; the TPU has {found} "
            f"({strategy.num_replicas_in_sync} replicas x {per_replica} core(s))"
        )


def check_jit_compile(jit_compile: bool, strategy: tf.distribute.Strategy) -> None:
    """XLA runs the logical CPUs of a simulated slice all on CPU:0 and then cannot reach the
    other replicas' variables (keras-team/keras#19005): refuse that pair up front."""
    devices = getattr(strategy.extended, "worker_devices", ())
    cpus = [d for d in devices if tf.DeviceSpec.from_string(d).device_type == "CPU"]
    if jit_compile and len(cpus) > 1:
        raise UsageError(
            f"train.jit_compile=True cannot run on a simulated slice of {len(cpus)} logical "
            "CPUs (XLA places them all on CPU:0); use --slice=cpu-1, a GPU/TPU slice or "
            "one CPU per worker"
        )
