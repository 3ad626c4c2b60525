"""The one error the CPU torch_npu raises for what moefr does not provide."""

import os

# <prefix>/lib/python3/torch_npu_shim/README.md once installed
README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


class MoefrNotProvidedError(AttributeError, NotImplementedError):
    """Raised for an attribute of torch_npu or torch.npu that moefr does not provide.

    It is an AttributeError, so hasattr() and getattr(..., default) feature checks see the name as
    absent (False / the default), and a NotImplementedError, so code that catches that learns the
    function exists on a real NPU but not here. The message names the function."""

    def __init__(self, qualname):
        super().__init__("%s is not provided by moefr: moefr's CPU torch_npu has torch_npu's MoE functions "
                         "and a CPU stand-in for torch.npu's device, stream and event calls, not this "
                         "(the list: %s)" % (qualname, README))
        self.name = qualname.rsplit(".", 1)[-1]
