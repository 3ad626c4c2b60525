"""torch.npu on CPU (moefr): installed as torch.npu, torch_npu.npu and sys.modules["torch.npu"].

There is no NPU: tensors stay CPU tensors and moefr runs the operators synchronously on the calling
thread's CPU, so every wait here returns at once and a stream is an ordering handle.

Provided:
  is_available()            False: there is no NPU, so `"npu" if torch.npu.is_available() else "cpu"`
                            picks the CPU (torch's own parser does not know the device string "npu")
  device_count()            1, as moefr's aclrtGetDeviceCount
  current_device(), set_device(d), device(d) (context manager)
                            an index per thread, 0 at first; any d >= 0, "npu" or "npu:N" is taken
                            (each process of a CPU expert-parallel run may pick its own), -1/None no-op
  synchronize(d), is_initialized(), init(), empty_cache()   no-ops (nothing runs asynchronously or is cached)
  get_device_name(d)        "moefr-cpu" (aclrtGetSocName)
  manual_seed(s), manual_seed_all(s)   torch.manual_seed: CPU tensors draw from the CPU generator
  Stream(device=None, priority=0), current_stream(d), default_stream(d), set_stream(s), stream(s)
                            streams as ordering handles: query() True, synchronize(), wait_event(e),
                            wait_stream(s), record_event(e=None); current_stream is per thread and
                            follows `with torch.npu.stream(s):`
  Event(enable_timing=False, blocking=False, interprocess=False)
                            record(stream=None) takes the time, elapsed_time(end) gives real
                            milliseconds between two records (RuntimeError without enable_timing or
                            a record, as on the NPU), query() True, synchronize(), wait(stream=None)
Anything else (memory statistics, graphs, amp, properties, ...) raises MoefrNotProvidedError."""

import os
import sys
import threading
import time
import types

import torch

from .._not_provided import MoefrNotProvidedError

__all__ = ["is_available", "device_count", "current_device", "set_device", "device", "synchronize",
           "is_initialized", "init", "empty_cache", "get_device_name", "manual_seed", "manual_seed_all",
           "is_bf16_supported", "set_compile_mode", "is_jit_compile_false", "amp", "map_npu_to_cpu",
           "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream", "StreamContext"]

_tls = threading.local()


def _device_index(d, optional=True):
    """The index of a device argument: None (or -1) -> the current device when optional; an int >= 0;
    "npu" / "npu:N"; anything with .type == "npu" and .index."""
    if d is None or (isinstance(d, int) and not isinstance(d, bool) and d == -1):
        if optional:
            return current_device()
        raise ValueError("torch.npu (moefr): a device is required, got %r" % (d,))
    if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
        return d
    if isinstance(d, str):
        if d == "npu":
            return current_device()
        if d.startswith("npu:") and d[4:].isdigit():
            return int(d[4:])
    if getattr(d, "type", None) == "npu":
        return current_device() if getattr(d, "index", None) is None else int(d.index)
    raise ValueError("torch.npu (moefr): %r is not an NPU device (an index >= 0, 'npu' or 'npu:N')" % (d,))


def is_available():
    """False, in every mode: there is no NPU, so `"npu" if torch.npu.is_available() else "cpu"` picks
    the CPU. (Saying True would send PyTorch itself, torch.compile among it, to the PrivateUse1
    backend's C++ hooks, which a CPU build does not have.)"""
    return False


def device_count():
    return 1


def current_device():
    return getattr(_tls, "device", 0)


def set_device(device):
    if device is None or (isinstance(device, int) and device == -1):
        return
    _tls.device = _device_index(device)


class device:
    """Context manager: the current device is `device` inside the block (None or -1: unchanged)."""

    def __init__(self, device):
        self.idx = -1 if device is None or (isinstance(device, int) and device == -1) else _device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current_device()
        if self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        set_device(self.prev_idx)
        return False


def synchronize(device=None):
    _device_index(device)


def is_initialized():
    return True


def init():
    pass


def empty_cache():
    pass


# What MoE code reads of the device, by the product moefr's library applies (moefr.soc()): the names
# Ascend's runtime gives (client code matches "Ascend910B...", "Ascend910_93", "Ascend950...").
_DEVICE_NAMES = {"ascend910b": "Ascend910B2", "ascend950": "Ascend950PR"}


def get_device_name(device=None):
    """The emulated NPU's name: "Ascend910B2" (Atlas A2, MOEFR_SOC=ascend910b, this package's default)
    or "Ascend950PR" (MOEFR_SOC unset before moefr's library was first used elsewhere, or set to
    anything else): the product whose operator rules moefr applies."""
    _device_index(device)
    import moefr
    return _DEVICE_NAMES.get(moefr.soc(), "Ascend950PR")


def is_bf16_supported(including_emulation=True):
    """True: every moefr operator that takes bf16 on the emulated product takes it on the CPU."""
    return True


def set_compile_mode(jit_compile=False):
    """A no-op: there is no NPU graph compiler on the CPU (torch_npu's switch between its online
    compilation and binary kernels)."""
    bool(jit_compile)


def is_jit_compile_false():
    return True


class _Amp(types.ModuleType):
    """torch.npu.amp: autocast is CPU autocast (torch.autocast("cpu", ...)) with torch_npu's arguments
    and its default dtype, float16 (PyTorch 1.13's CPU autocast takes bfloat16 only: it disables itself
    with a warning for float16, as PyTorch does). Anything else (GradScaler, ...) is not provided."""

    def autocast(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        return torch.autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise MoefrNotProvidedError("torch.npu.amp." + name)


amp = _Amp("torch.npu.amp")


def manual_seed(seed):
    torch.manual_seed(seed)


def manual_seed_all(seed):
    torch.manual_seed(seed)


class Stream:
    """An ordering handle: work is done when the call that issued it returns."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device_index = _device_index(device)
        self.priority = priority

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError("Stream.wait_event: expected a torch.npu.Event, got %s" % type(event).__name__)

    def wait_stream(self, stream):
        if not isinstance(stream, Stream):
            raise TypeError("Stream.wait_stream: expected a torch.npu.Stream, got %s" % type(stream).__name__)

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __enter__(self):
        self._ctx = StreamContext(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def __repr__(self):
        return "<torch.npu.Stream (moefr CPU) device=npu:%d at 0x%x>" % (self.device_index, id(self))


_defaults = {}
_defaults_lock = threading.Lock()


def default_stream(device=None):
    idx = _device_index(device)
    s = _defaults.get(idx)  # made once: later calls take no lock (torch.compile cannot trace one)
    if s is not None:
        return s
    with _defaults_lock:
        if idx not in _defaults:
            _defaults[idx] = Stream(idx)
        return _defaults[idx]


default_stream(0)  # the device every moefr tensor is on


def current_stream(device=None):
    idx = _device_index(device)
    s = getattr(_tls, "stream", None)
    return s if s is not None and s.device_index == idx else default_stream(idx)


def set_stream(stream):
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError("torch.npu.set_stream: expected a torch.npu.Stream, got %s" % type(stream).__name__)
    _tls.stream = stream


class StreamContext:
    """`with torch.npu.stream(s):` - current_stream() is s inside the block (None: unchanged)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev = None

    def __enter__(self):
        if self.stream is not None:
            self.prev = getattr(_tls, "stream", None)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _tls.stream = self.prev
        return False


def stream(stream):
    return StreamContext(stream)


class Event:
    """A point in time: record() takes it (the work before it is already done on the CPU)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self._time = None

    def record(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError("Event.record: expected a torch.npu.Stream, got %s" % type(stream).__name__)
        self._time = time.perf_counter()

    def wait(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError("Event.wait: expected a torch.npu.Stream, got %s" % type(stream).__name__)

    def query(self):
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, end_event):
        if not isinstance(end_event, Event):
            raise TypeError("Event.elapsed_time: expected a torch.npu.Event, got %s" % type(end_event).__name__)
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with enable_timing=True")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded first")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        return "<torch.npu.Event (moefr CPU) %s>" % ("recorded" if self._time is not None else "not recorded")


class _Config:
    """torch.npu.config: allow_internal_format (NPU private formats; CPU tensors are always ND, so
    it changes nothing here) is read and set as on the NPU."""

    def __init__(self):
        self.allow_internal_format = False

    def __repr__(self):
        return "<torch.npu.config (moefr CPU) allow_internal_format=%r>" % self.allow_internal_format


config = _Config()


def __getattr__(name):
    raise MoefrNotProvidedError("torch.npu." + name)


# ---- installed into torch ----

def _tensor_npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
    """Tensor.npu() on CPU: a copy, as the move from the host to the NPU gives (gradients flow back
    to the original; writing one leaves the other; code comparing its "cpu" and "npu" results then
    compares two tensors, not one with itself)."""
    _device_index(device)
    return self.clone(memory_format=memory_format)


def _module_npu(self, device=None):
    """nn.Module.npu() on CPU: the module itself, its parameters unmoved."""
    _device_index(device)
    return self


torch.npu = sys.modules[__name__]
sys.modules["torch.npu"] = sys.modules[__name__]
sys.modules["torch.npu.amp"] = amp

from . import _devices  # noqa: E402
map_npu_to_cpu = _devices.map_npu_to_cpu
_devices.install()  # integer devices are the emulated NPU, the CPU
if os.environ.get("MOEFR_NPU_DEVICE") == "cpu":
    map_npu_to_cpu()
torch.Tensor.npu = _tensor_npu
torch.nn.Module.npu = _module_npu
# Tensors are CPU tensors. (PyTorch's override tables, which torch.compile reads, expect is_npu once the
# PrivateUse1 backend is named "npu".)
torch.Tensor.is_npu = property(lambda self: False, doc="False: moefr's tensors are CPU tensors")
