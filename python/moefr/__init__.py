"""moefr - Python and PyTorch front end of libmoefr (CANN's MoE finalize-routing operators on CPU),
pure ctypes over the library's public C API; torch is optional (imported only for torch inputs)."""

from . import _views
from ._lib import MoefrError, library_path
from ._ops import moe_finalize_routing_grad

__all__ = ["moe_finalize_routing", "moe_finalize_routing_grad", "npu_moe_finalize_routing", "MoefrError",
           "library_path", "version", "isa", "soc",
           "torch_npu_path", "use_torch_npu"]

try:
    from ._version import __version__  # written at install time from include/moefr/moefr.h
except ImportError:  # the source tree
    from ._paths import source_version as _source_version
    __version__ = _source_version()


def moe_finalize_routing(expanded_x, expanded_row_idx, x1=None, x2=None, bias=None, scales=None,
                         expert_idx=None, drop_pad_mode=0):
    """MoE finalize routing (aclnnMoeFinalizeRoutingV2, SPEC section 8):

        out[r] = x1[r] + x2[r] + sum_k scales[r, k] * (expanded_x[d] + bias[expert_idx[r, k]])

    with d = expanded_row_idx[k*R + r] in drop_pad_mode 0/1 (column layout, as
    aclnnMoeInitRouting emits) and expanded_row_idx[r*K + k] in modes 2/3 (row layout);
    modes 1/3 take expanded_x as (E, C, H) and index -1 for a dropped slot.

    With torch tensors the result is differentiable: expanded_x and scales get their
    gradients from aclnnMoeFinalizeRoutingV2Grad, x1 and x2 get grad_out, bias gets the
    deterministic per-expert sum of scales * grad_out. Numpy arrays in give a numpy array
    out (no autograd). Raises MoefrError (a ValueError and a RuntimeError) with the library's message."""
    args = (expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx)
    if any(_views.is_torch(a) for a in args):
        from . import _autograd
        return _autograd.apply(*args, drop_pad_mode)
    from ._ops import finalize_routing_forward
    return finalize_routing_forward(*args, drop_pad_mode=drop_pad_mode)


def npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                             export_for_source_row, drop_pad_mode=0):
    """moe_finalize_routing with torch_npu's argument order and names, so code written for
    torch_npu.npu_moe_finalize_routing runs unchanged on CPU (and is differentiable here)."""
    return moe_finalize_routing(expanded_permuted_rows, expanded_src_to_dst_row, x1=skip1, x2=skip2,
                                bias=bias, scales=scales, expert_idx=export_for_source_row,
                                drop_pad_mode=drop_pad_mode)


def version():
    """Version string of the loaded libmoefr."""
    from ._lib import library
    lib = library()
    return lib.moefrVersion().decode() if hasattr(lib, "moefrVersion") else None


def soc():
    """The product whose operator rules the loaded libmoefr applies: "ascend950" or "ascend910b" (Atlas
    A2/A3), as MOEFR_SOC chose it when the library first needed it (read once per process)."""
    from ._lib import library
    lib = library()
    return lib.moefrSoc().decode() if hasattr(lib, "moefrSoc") else None


def isa():
    """Kernel path the loaded libmoefr uses ("scalar", "avx2", "avx512", ...)."""
    from ._lib import library
    lib = library()
    return lib.moefrIsa().decode() if hasattr(lib, "moefrIsa") else None


def torch_npu_path():
    """The directory holding moefr's opt-in CPU torch_npu package (also `python -m moefr
    --torch-npu-path`): put it on PYTHONPATH, or call use_torch_npu()."""
    from ._paths import torch_npu_dir
    return torch_npu_dir()


def use_torch_npu():
    """Makes `import torch_npu` give moefr's CPU torch_npu in this process (for test suites and
    notebooks; a program can instead run with PYTHONPATH=$(python -m moefr --torch-npu-path)), and
    returns that module. Raises ImportError where Ascend's own torch_npu is installed."""
    import importlib
    import sys
    path = torch_npu_path()
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module("torch_npu")


def register_cpu_kernels():
    """On a machine with Ascend's torch_npu: imports it (it defines the torch.ops.npu operators), then
    gives every operator moefr provides whose installed schema is moefr's a CPU kernel (and moefr's
    autograd where torch_npu registered none), so the same code gets numbers for CPU tensors.
    Returns (operators given a CPU kernel, {operator: why it was left alone})."""
    import torch_npu  # noqa: F401  (Ascend's: its library defines the npu namespace first)
    from . import _torch_ops
    return list(_torch_ops.REGISTERED), dict(_torch_ops.SKIPPED)
