"""`from torch_npu.contrib import transfer_to_npu` on CPU (moefr).

torch_npu's module makes code written for CUDA run on the NPU: the device "cuda" given to PyTorch
becomes "npu". Here the NPU is the CPU, so importing it maps "cuda", "cuda:N", torch.device("cuda")
and integer devices, and "npu" ones (torch.npu.map_npu_to_cpu()), to the CPU in PyTorch's factory
functions, Tensor.new_*, Tensor.to and nn.Module.to. torch.cuda itself is left alone: its calls
(torch.cuda.is_available() is False on a CPU build) are not redirected to torch.npu."""

import torch  # noqa: F401

from ..npu import _devices

_devices.map_npu_to_cpu()
_devices.map_cuda_to_cpu()
