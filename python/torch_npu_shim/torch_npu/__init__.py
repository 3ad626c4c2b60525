"""torch_npu for CPU PyTorch, from moefr: `import torch_npu` as on an Ascend machine.

Switched on with `source <prefix>/set_env.sh --torch-npu` (or `source <prefix>/bin/setenv.bash
--torch-npu`), which puts <prefix>/lib/python3/torch_npu_shim on PYTHONPATH. Importing it:
- re-exports every function of moefr.torch_npu (npu_moe_init_routing_v2, npu_moe_token_permute, ...),
  looked up when asked for, so functions added to moefr.torch_npu appear here without a change;
- installs torch.npu (also torch_npu.npu and `import torch.npu`): a CPU stand-in for the device, stream
  and event calls (torch_npu/npu/__init__.py lists them);
- adds Tensor.npu() (a CPU copy, as the move to the NPU) and nn.Module.npu() (the module itself), and
  npu_format_cast / npu_format_cast_ (identity: CPU tensors have no NPU storage format).
Anything else raises MoefrNotProvidedError, an AttributeError and a NotImplementedError naming the
function, so `hasattr(torch_npu, "npu_moe_distribute_dispatch")` is False. README.md next to this
package lists what is and is not provided."""

import os as _os
import sys as _sys
import types as _types


def _real_torch_npu():
    """Where Ascend's own torch_npu is installed, if it is: its distribution's metadata, or another
    top-level torch_npu package on sys.path. None when there is none."""
    import importlib.machinery
    import importlib.metadata
    try:
        dist = importlib.metadata.distribution("torch_npu")
        return "the torch_npu distribution %s in %s" % (dist.version, dist.locate_file(""))
    except importlib.metadata.PackageNotFoundError:
        pass
    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    others = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("torch_npu", others)
    if spec is not None and spec.origin != _os.path.abspath(__file__):
        return "%s" % (spec.origin or spec.submodule_search_locations)
    return None


if _os.environ.get("MOEFR_TORCH_NPU_SHADOW") != "1":  # an escape hatch for moefr's own tests
    _where = _real_torch_npu()
    if _where is not None:
        raise ImportError(
            "moefr's CPU torch_npu refuses to load: Ascend's torch_npu is installed (%s). On an Ascend host "
            "use it (moefr.register_cpu_kernels() gives its MoE operators moefr's CPU kernels for CPU "
            "tensors) and take moefr's torch_npu directory off PYTHONPATH." % _where)

# The product emulated: Atlas A2/A3 (MOEFR_SOC=ascend910b) unless MOEFR_SOC says otherwise. The MoE code
# this package serves (vllm-ascend, MindSpeed, cann-recipes-infer, LLaMA-Factory, torchtitan-npu) is
# written for A2/A3, op-plugin's MoE tests run there, and Ascend 950's tables refuse its fp32
# GroupedMatmul. The library reads MOEFR_SOC once, on first use; torch.npu.get_device_name() reports
# what it actually applies (moefr.soc()).
_os.environ.setdefault("MOEFR_SOC", "ascend910b")

import torch as _torch  # noqa: E402

try:
    from moefr import torch_npu as _impl
except ImportError:  # only this directory on PYTHONPATH: use the moefr installed beside it
    _sys.path.append(_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(
        _os.path.abspath(__file__)))), "dist-packages"))
    from moefr import torch_npu as _impl
import moefr as _moefr

from ._not_provided import MoefrNotProvidedError
from . import npu  # noqa: F401  (installs torch.npu)

__version__ = _moefr.__version__ + "+moefr"


def _exported(name):
    """True for the names of moefr.torch_npu this package re-exports: its __all__, MoefrError,
    and every npu_* / _npu_* function (torch_npu's public and underscore operator names)."""
    if name.startswith("__") or not hasattr(_impl, name):
        return False
    if name in getattr(_impl, "__all__", ()) or name == "MoefrError":
        return True
    value = getattr(_impl, name)
    return name.startswith(("npu_", "_npu_")) and callable(value) and not isinstance(value, _types.ModuleType)


def __getattr__(name):
    if _exported(name):
        return getattr(_impl, name)
    raise MoefrNotProvidedError("torch_npu." + name)


def __dir__():
    return sorted(set(globals()) | {n for n in dir(_impl) if _exported(n)})


# torch_npu's own dtype constants (torch_npu._C._cd.DType): 256 + the aclDataType value, for the
# dtypes PyTorch has no name for (and the others alike), as op arguments such as x_dtype / tokens_dtype.
_CUSTOM_DTYPES = dict(
    float32=0, float16=1, int8=2, int32=3, uint8=4, int16=6, uint16=7, uint32=8, int64=9, uint64=10,
    float64=11, bool=12, string=13, complex64=16, complex128=17, bfloat16=27, int4=29, uint1=30,
    complex32=33, hifloat8=34, float8_e5m2=35, float8_e4m3fn=36, float8_e8m0fnu=37, float6_e3m2=38,
    float6_e2m3=39, float4_e2m1fn_x2=40, float4_e1m2fn_x2=41)
globals().update({_n: 256 + _v for _n, _v in _CUSTOM_DTYPES.items()})

if not _exported("npu_format_cast"):
    def npu_format_cast(self, acl_format, customize_dtype=None):
        """torch_npu.npu_format_cast on CPU: the tensor itself (CPU tensors have no NPU storage format;
        the data and the logical layout are what an ND tensor holds)."""
        if not isinstance(self, _torch.Tensor):
            raise TypeError("torch_npu.npu_format_cast: self must be a torch.Tensor, got %s" % type(self).__name__)
        int(acl_format)
        return self

if not _exported("npu_format_cast_"):
    def npu_format_cast_(self, src):
        """torch_npu.npu_format_cast_ on CPU: the tensor itself (see npu_format_cast)."""
        if not isinstance(self, _torch.Tensor):
            raise TypeError("torch_npu.npu_format_cast_: self must be a torch.Tensor, got %s" % type(self).__name__)
        return self

__all__ = sorted({n for n in dir(_impl) if _exported(n)} | set(_CUSTOM_DTYPES) |
                 {"npu", "contrib", "npu_format_cast", "npu_format_cast_", "MoefrNotProvidedError"})
