"""torch_npu.contrib on CPU (moefr): only transfer_to_npu; anything else raises MoefrNotProvidedError."""

from .._not_provided import MoefrNotProvidedError


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise MoefrNotProvidedError("torch_npu.contrib." + name)
