"""`from torch_npu.contrib import transfer_to_npu` on CPU (moefr).

torch_npu's module makes code written for CUDA run on the NPU: the device "cuda" given to PyTorch
becomes "npu". Here the NPU is the CPU, so importing it maps "cuda", "cuda:N", torch.device("cuda")
and integer devices, and "npu" ones (torch.npu.map_npu_to_cpu()), to the CPU in PyTorch's factory
functions, Tensor.new_*, Tensor.to and nn.Module.to. As torch_npu's module does, torch.cuda's stream, event
and device calls become torch.npu's (CUDA code such as Megatron's token dispatcher creates torch.cuda.Stream
objects): Stream, Event, current_stream, default_stream, set_stream, stream, synchronize, current_device,
set_device, device, device_count, get_device_name, manual_seed, manual_seed_all, empty_cache.
torch.cuda.is_available() stays False, as torch.npu.is_available() is here."""

import torch

from .. import npu as _npu
from ..npu import _devices

_devices.map_npu_to_cpu()
_devices.map_cuda_to_cpu()

_REDIRECTED = ("Stream", "Event", "current_stream", "default_stream", "set_stream", "stream", "synchronize",
               "current_device", "set_device", "device", "device_count", "get_device_name", "manual_seed",
               "manual_seed_all", "empty_cache")
for _name in _REDIRECTED:
    setattr(torch.cuda, _name, getattr(_npu, _name))
