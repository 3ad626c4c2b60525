"""moefr._views - describes numpy arrays and CPU torch tensors to libmoefr as aclTensor views
(shape, element strides, offset over the whole underlying storage), without copying."""

import ctypes
import sys

import numpy as np

from . import _lib

# aclDataType values (SPEC section 2).
ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8 = 0, 1, 2, 3, 4
ACL_INT16, ACL_UINT16, ACL_UINT32, ACL_INT64, ACL_UINT64 = 6, 7, 8, 9, 10
ACL_DOUBLE, ACL_BOOL, ACL_COMPLEX64, ACL_COMPLEX128, ACL_BF16 = 11, 12, 16, 17, 27
ACL_FLOAT8_E5M2, ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E8M0 = 35, 36, 37

_NUMPY_ACL = {
    np.dtype(np.float32): ACL_FLOAT, np.dtype(np.float16): ACL_FLOAT16,
    np.dtype(np.int8): ACL_INT8, np.dtype(np.int32): ACL_INT32, np.dtype(np.uint8): ACL_UINT8,
    np.dtype(np.int16): ACL_INT16, np.dtype(np.uint16): ACL_UINT16, np.dtype(np.uint32): ACL_UINT32,
    np.dtype(np.int64): ACL_INT64, np.dtype(np.uint64): ACL_UINT64, np.dtype(np.float64): ACL_DOUBLE,
    np.dtype(np.bool_): ACL_BOOL, np.dtype(np.complex64): ACL_COMPLEX64,
    np.dtype(np.complex128): ACL_COMPLEX128,
}

_torch = None
_TORCH_ACL = None
_UNTYPED = False  # torch has Tensor.untyped_storage (PyTorch >= 2.0)


def torch_module():
    """torch if it is importable, else None; imported on first need so numpy users never pay for it."""
    global _torch, _TORCH_ACL, _UNTYPED
    if _torch is None:
        if "torch" not in sys.modules:
            try:
                import torch  # noqa: F401
            except ImportError:
                _torch = False
                return None
        import torch
        _torch = torch
        _UNTYPED = hasattr(torch.Tensor, "untyped_storage")
        _TORCH_ACL = {
            torch.float32: ACL_FLOAT, torch.float16: ACL_FLOAT16, torch.bfloat16: ACL_BF16,
            torch.int8: ACL_INT8, torch.int32: ACL_INT32, torch.uint8: ACL_UINT8,
            torch.int16: ACL_INT16, torch.int64: ACL_INT64, torch.float64: ACL_DOUBLE,
            torch.bool: ACL_BOOL, torch.complex64: ACL_COMPLEX64, torch.complex128: ACL_COMPLEX128,
        }
        # PyTorch >= 2.1's 8-bit floats (float8_e8m0fnu from 2.7) carry Ascend 950's FLOAT8 data
        for name, acl in (("float8_e5m2", ACL_FLOAT8_E5M2), ("float8_e4m3fn", ACL_FLOAT8_E4M3FN),
                          ("float8_e8m0fnu", ACL_FLOAT8_E8M0)):
            if hasattr(torch, name):
                _TORCH_ACL[getattr(torch, name)] = acl
    return _torch or None


def is_torch(x):
    # A torch tensor can only exist once torch is imported, so numpy callers never import it.
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def as_input(x, name):
    """Normalises one input: torch tensors (detached, CPU) and numpy arrays pass through;
    anything else array-like becomes a numpy array."""
    if x is None:
        return None
    if is_torch(x):
        if x.device.type != "cpu":
            raise _lib.MoefrTypeError("moefr: %s is on %s; moefr runs on CPU tensors" % (name, x.device))
        return x.detach()
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    return x


class View:
    """Everything aclCreateTensor needs, plus the object that owns the memory."""

    __slots__ = ("owner", "base_ptr", "dims", "strides", "offset", "storage", "acl_dtype")

    def __init__(self, owner, base_ptr, dims, strides, offset, storage, acl_dtype):
        self.owner, self.base_ptr = owner, base_ptr
        self.dims, self.strides, self.offset = dims, strides, offset
        self.storage, self.acl_dtype = storage, acl_dtype


def _torch_view(t, name):
    # the common case first, with as few torch calls as possible (each costs more inside a
    # dispatcher kernel, where torch.ops.npu calls run)
    acl = _TORCH_ACL.get(t.dtype) if _TORCH_ACL else None
    if acl is None:
        torch_module()
        acl = _TORCH_ACL.get(t.dtype)
        if acl is None:
            raise _lib.MoefrTypeError("moefr: %s has dtype %s, which has no aclDataType" % (label(name), t.dtype))
    if t.layout is not _torch.strided:
        raise _lib.MoefrTypeError("moefr: %s has layout %s; moefr needs strided tensors" % (label(name), t.layout))
    item = t.element_size()
    if _UNTYPED:
        st = t.untyped_storage()
        nbytes, base = st.nbytes(), st.data_ptr()
    else:  # PyTorch 1.13
        st = t.storage()
        nbytes = st.nbytes() if callable(getattr(st, "nbytes", None)) else st.size() * item
        base = st.data_ptr()
    # torch's storage_offset is in elements of t's dtype from the storage start,
    # so it is exactly aclCreateTensor's offset.
    return View(t, base, list(t.shape), list(t.stride()), t.storage_offset(), nbytes // item, acl)


def _numpy_view(a, name):
    if a.dtype not in _NUMPY_ACL:
        raise _lib.MoefrTypeError("moefr: %s has dtype %s, which has no aclDataType (numpy has no bfloat16; "
                        "use torch for bf16)" % (label(name), a.dtype))
    item = a.itemsize
    if any(s % item for s in a.strides):
        a = np.ascontiguousarray(a)  # byte strides that are not whole elements cannot be described
    data = a.__array_interface__["data"][0]
    strides = [s // item for s in a.strides]
    if a.size == 0:
        return View(a, data, list(a.shape), strides, 0, 0, _NUMPY_ACL[a.dtype])
    # The view's own extent [lo, hi) in bytes; numpy strides may be negative.
    lo = data + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    hi = data + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0) + item
    # Describe the whole allocation when the owning ndarray's block is whole elements
    # around the view; otherwise the view's own extent is a correct (smaller) storage.
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    r_lo, r_hi = _byte_bounds(root)
    if r_lo <= lo and hi <= r_hi and (lo - r_lo) % item == 0:
        lo = r_lo
        hi = r_lo + ((r_hi - r_lo) // item) * item
    return View(a, lo, list(a.shape), strides, (data - lo) // item, (hi - lo) // item,
                _NUMPY_ACL[a.dtype])


def _byte_bounds(a):
    ai = a.__array_interface__
    lo = hi = ai["data"][0]
    if ai["strides"] is None:
        return lo, lo + a.nbytes
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return lo, lo
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def label(name):
    """A tensor's name for messages: a string, or (operator, argument index[, list position]), formatted
    only when a message needs it."""
    if isinstance(name, tuple):
        return "%s arg %d" % name[:2] + ("[%d]" % name[2] if len(name) > 2 else "")
    return name


def view_of(x, name):
    return _torch_view(x, name) if is_torch(x) else _numpy_view(x, name)


class Descriptors:
    """aclTensor handles for one call; destroyed on exit, inputs kept alive meanwhile."""

    def __init__(self, lib):
        self.lib = lib
        self.handles = []
        self.keep = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            self.lib.aclDestroyTensor(h)
        self.handles = []
        self.keep = []
        return False

    def make(self, x, name):
        if x is None:
            return None
        v = view_of(x, name)
        nd = len(v.dims)
        dims = (ctypes.c_int64 * max(nd, 1))(*v.dims)
        strides = (ctypes.c_int64 * max(nd, 1))(*v.strides)
        storage = (ctypes.c_int64 * 1)(v.storage)
        h = self.lib.aclCreateTensor(dims, nd, v.acl_dtype, strides, v.offset, _lib.ACL_FORMAT_ND,
                                     storage, 1, ctypes.c_void_p(v.base_ptr))
        if not h:
            raise _lib.MoefrError("moefr: %s: %s" % (label(name), _lib.last_error(self.lib)), None,
                                  "aclCreateTensor")
        self.handles.append(h)
        self.keep.append(v)
        return h
