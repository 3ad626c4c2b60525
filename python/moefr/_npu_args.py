"""_npu_args.py - the argument checks every torch_npu function shares.

torch_npu's wrappers refuse a bad argument with TORCH_CHECK, a RuntimeError; so do these, so code
written `except RuntimeError` for the NPU catches them: _check raises MoefrError (a ValueError and a
RuntimeError, as the library's own refusals), _cpu and _cpu_tensor raise MoefrTypeError (a TypeError,
ValueError and RuntimeError)."""
import torch

from ._lib import MoefrError, MoefrTypeError


def _check(cond, msg):
    if not cond:
        raise MoefrError("moefr.torch_npu: " + msg)


def _cpu_tensor(t, name):
    """t itself when it is a CPU tensor."""
    if not isinstance(t, torch.Tensor):
        raise MoefrTypeError("moefr.torch_npu: %s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if not t.is_cpu:
        raise MoefrTypeError("moefr.torch_npu: %s is on %s; moefr runs on CPU tensors" % (name, t.device))
    return t


def _cpu(t, name):
    """_cpu_tensor for an optional argument: None passes."""
    return t if t is None else _cpu_tensor(t, name)
