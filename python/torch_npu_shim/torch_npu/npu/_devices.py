"""Device arguments that name the NPU, turned into the CPU where client code hands them to PyTorch.

- Integer devices (always, on every PyTorch): on Ascend, `torch.npu.current_device()` is an index that
  torch_npu makes PyTorch read as the NPU; stock PyTorch reads `device=0` as CUDA device 0 ("Torch not
  compiled with CUDA enabled"). With this package an integer device means the emulated NPU, the CPU.
- Device strings (opt-in: `MOEFR_NPU_DEVICE=cpu` when torch_npu is imported, or
  `torch.npu.map_npu_to_cpu()`): "npu", "npu:N" and, on PyTorch >= 2.0, `torch.device("npu")` (the
  PrivateUse1 backend renamed "npu", as torch_npu names it) mean the CPU, as torch_npu's own
  transfer_to_npu maps "cuda" to "npu".
Tensors still report `device(type='cpu')`: code that tests `x.device.type == "npu"` sees "cpu".

What is wrapped: torch's factory functions that take `device=` (tensor, zeros, empty, arange, ...,
*_like), Tensor.new_* and Tensor.to / nn.Module.to (a device given positionally or by keyword)."""

import functools
import threading

import torch

_FACTORIES = ("tensor", "as_tensor", "empty", "zeros", "ones", "full", "arange", "range", "linspace", "logspace",
              "eye", "rand", "randn", "randint", "randperm", "empty_like", "zeros_like", "ones_like", "full_like",
              "rand_like", "randn_like", "randint_like", "empty_strided", "scalar_tensor", "tril_indices",
              "triu_indices", "normal", "bernoulli", "asarray")
_NEW = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided")

_state = {"strings": False, "cuda": False, "installed": False}
_lock = threading.Lock()


def _is_npu_string(d):
    return isinstance(d, str) and (d == "npu" or (d.startswith("npu:") and d[4:].isdigit()))


def map_device(d):
    """The device PyTorch should get for a client's device argument d."""
    if isinstance(d, bool):
        return d
    if isinstance(d, int):
        return "cpu"
    if _state["strings"]:
        if _is_npu_string(d):
            return "cpu"
        if isinstance(d, torch.device) and d.type == "npu":
            return torch.device("cpu")
    if _state["cuda"]:
        if isinstance(d, str) and (d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit())):
            return "cpu"
        if isinstance(d, torch.device) and d.type == "cuda":
            return torch.device("cpu")
    return d


def _wrap_kw(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = map_device(kwargs["device"])
        return fn(*args, **kwargs)
    wrapper.__moefr_wrapped__ = fn
    return wrapper


def _looks_like_device(a):
    return isinstance(a, (int, str, torch.device)) and not isinstance(a, bool)


def _wrap_to(fn):
    @functools.wraps(fn)
    def to(self, *args, **kwargs):
        if args and _looks_like_device(args[0]):
            args = (map_device(args[0]),) + args[1:]
        if "device" in kwargs:
            kwargs["device"] = map_device(kwargs["device"])
        return fn(self, *args, **kwargs)
    to.__moefr_wrapped__ = fn
    return to


def install():
    """Integer devices mean the CPU from now on (idempotent)."""
    with _lock:
        if _state["installed"]:
            return
        for name in _FACTORIES:
            f = getattr(torch, name, None)
            if f is not None and not hasattr(f, "__moefr_wrapped__"):
                setattr(torch, name, _wrap_kw(f))
        for name in _NEW:
            f = getattr(torch.Tensor, name, None)
            if f is not None and not hasattr(f, "__moefr_wrapped__"):
                setattr(torch.Tensor, name, _wrap_kw(f))
        torch.Tensor.to = _wrap_to(torch.Tensor.to)
        torch.nn.Module.to = _wrap_to(torch.nn.Module.to)
        _state["installed"] = True


_TWIN_KEYS = {"PrivateUse1": "CPU", "AutogradPrivateUse1": "AutogradCPU"}


def _twin_privateuse1_kernels():
    """In this mode the NPU's tensors are CPU tensors, so a kernel a project registers for PyTorch's
    PrivateUse1 ("npu") backend (torch.library.impl(..., "npu" / "PrivateUse1"), e.g. torchtitan-npu's
    aten::_grouped_mm on npu_grouped_matmul) is registered for the CPU too, from the moment the mode is
    on: the CPU tensors then run the code written for the NPU."""
    lib_cls = torch.library.Library
    if getattr(lib_cls.impl, "__moefr_wrapped__", None) is not None:
        return
    orig = lib_cls.impl

    @functools.wraps(orig)
    def impl(self, op_name, fn, dispatch_key="", *args, **kwargs):
        result = orig(self, op_name, fn, dispatch_key, *args, **kwargs)
        twin = _TWIN_KEYS.get(dispatch_key)
        if twin is not None and _state["strings"]:
            orig(self, op_name, fn, twin, *args, **kwargs)
        return result
    impl.__moefr_wrapped__ = orig
    lib_cls.impl = impl


def strings_mode():
    return _state["strings"]


def map_npu_to_cpu():
    """The opt-in mode: "npu", "npu:N" and torch.device("npu") mean the CPU (see the module docstring).
    Returns True when torch.device("npu") itself can be made (PyTorch >= 2.0), False on 1.13."""
    install()
    _state["strings"] = True
    rename = getattr(torch.utils, "rename_privateuse1_backend", None)
    if rename is None:
        return False
    try:
        torch.device("npu")
    except RuntimeError:
        rename("npu")
    _twin_privateuse1_kernels()
    # torch.accelerator (PyTorch >= 2.6) asks the device module of the PrivateUse1 backend
    register = getattr(torch, "_register_device_module", None)
    if register is not None:
        try:
            register("npu", torch.npu)
        except RuntimeError:  # registered already
            pass
    return True


def map_cuda_to_cpu():
    """torch_npu.contrib.transfer_to_npu: "cuda" devices mean the NPU, here the CPU."""
    install()
    _state["cuda"] = True

