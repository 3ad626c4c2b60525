"""moefr._lib - finds and loads libmoefr with ctypes, declares the public C API it uses,
and turns a failing status into a MoefrError carrying aclGetRecentErrMsg's text."""

import atexit
import ctypes
import glob
import os
import threading

__all__ = ["MoefrError", "library", "library_path", "run_two_phase"]

ACLNN_SUCCESS = 0
ACL_SUCCESS = 0
ACL_FORMAT_ND = 2
ACL_MEM_MALLOC_HUGE_FIRST = 0

_c_i64p = ctypes.POINTER(ctypes.c_int64)


class MoefrError(ValueError, RuntimeError):
    """A status from libmoefr; str() is the library's message, .status its code. Both a ValueError
    (moefr's own API has always raised that) and a RuntimeError (what torch_npu raises for the same
    refusals, so code written `except RuntimeError` for the NPU catches it too)."""

    def __init__(self, message, status=None, function=None):
        super().__init__(message)
        self.status = status
        self.function = function


class MoefrTypeError(TypeError, ValueError, RuntimeError):
    """An argument moefr cannot pass to the library (not a CPU tensor, a dtype with no aclDataType):
    a TypeError, and a ValueError and RuntimeError like MoefrError, so `except RuntimeError` written for
    torch_npu catches it too."""


def _candidates():
    """Where the library may live, most specific first, and whether MOEFR_LIBRARY forced it."""
    env = os.environ.get("MOEFR_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    # The pip package: moefr/lib/libmoefr.so.N beside this file (pyproject.toml), first.
    out = sorted(glob.glob(os.path.join(here, "lib", "libmoefr.so*")))
    parent = os.path.dirname(here)
    if os.path.basename(parent) in ("dist-packages", "site-packages"):
        # Installed: <prefix>/lib/python3/dist-packages/moefr -> <prefix>/lib64.
        prefix = os.path.normpath(os.path.join(parent, "..", "..", ".."))
        for libdir in ("lib64", "lib"):
            for name in ("libmoefr.so", "libmoefr.so.0"):
                out.append(os.path.join(prefix, libdir, name))
    root = os.path.dirname(parent)
    if os.path.basename(parent) == "python" and os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        # Source tree: <root>/python/moefr -> <root>/build, then other build dirs, newest first.
        builds = [os.path.join(root, "build", "libmoefr.so")]
        others = glob.glob(os.path.join(root, "build*", "libmoefr.so"))
        others.sort(key=lambda p: os.path.getmtime(p), reverse=True)
        builds.extend(p for p in others if p not in builds)
        out.extend(p for p in builds if not _sanitized(os.path.dirname(p)))
    return out, False


def _sanitized(build_dir):
    """A sanitizer build cannot be loaded into an uninstrumented interpreter (the process
    aborts rather than failing dlopen), so such build dirs are never picked by default."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("MOEFR_SANITIZE:"):
                    value = line.split("=", 1)[1].strip()
                    return value.upper() not in ("", "OFF", "0", "FALSE", "NO", "N")
    except OSError:
        pass
    return False


_lock = threading.Lock()
_lib = None
_lib_path = None


def _declare(lib):
    i64, u64, i32 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int32
    vp = ctypes.c_void_p
    lib.aclCreateTensor.restype = vp
    lib.aclCreateTensor.argtypes = [_c_i64p, u64, ctypes.c_int, _c_i64p, i64, ctypes.c_int,
                                    _c_i64p, u64, vp]
    lib.aclDestroyTensor.restype = i32
    lib.aclDestroyTensor.argtypes = [vp]
    lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
    lib.aclGetRecentErrMsg.argtypes = []
    lib.aclrtMalloc.restype = ctypes.c_int
    lib.aclrtMalloc.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t, ctypes.c_int]
    lib.aclrtFree.restype = ctypes.c_int
    lib.aclrtFree.argtypes = [vp]
    lib.aclDestroyAclOpExecutor.restype = i32
    lib.aclDestroyAclOpExecutor.argtypes = [vp]
    lib.aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize.restype = i32
    lib.aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize.argtypes = (
        [vp] * 6 + [i64] * 4 + [vp, vp, ctypes.POINTER(u64), ctypes.POINTER(vp)])
    lib.aclnnMoeFinalizeRoutingV2Grad.restype = i32
    lib.aclnnMoeFinalizeRoutingV2Grad.argtypes = [vp, u64, vp, vp]
    # The forward operator may be missing from an older library; it is then
    # reported when first used rather than breaking the backward.
    if hasattr(lib, "aclnnMoeFinalizeRoutingV2GetWorkspaceSize"):
        lib.aclnnMoeFinalizeRoutingV2GetWorkspaceSize.restype = i32
        lib.aclnnMoeFinalizeRoutingV2GetWorkspaceSize.argtypes = (
            [vp] * 7 + [i64, vp, ctypes.POINTER(u64), ctypes.POINTER(vp)])
        lib.aclnnMoeFinalizeRoutingV2.restype = i32
        lib.aclnnMoeFinalizeRoutingV2.argtypes = [vp, u64, vp, vp]
    for name in ("moefrVersion", "moefrIsa", "moefrBlas", "moefrSoc"):
        if hasattr(lib, name):
            getattr(lib, name).restype = ctypes.c_char_p
            getattr(lib, name).argtypes = []


def library():
    """The loaded libmoefr (loaded on first use, so `import moefr` never fails on it)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        paths, forced = _candidates()
        if not forced:
            paths.append("libmoefr.so.0")  # last resort: the dynamic loader's own search path
        errors = []
        for p in paths:
            if not forced and os.sep in p and not os.path.exists(p):
                continue
            try:
                lib = ctypes.CDLL(p)
            except OSError as e:
                errors.append("%s: %s" % (p, e))
                continue
            _declare(lib)
            _lib, _lib_path = lib, p
            return lib
        why = "looked for " + ", ".join(paths) + ("; " + "; ".join(errors) if errors else "")
        raise OSError("moefr: cannot load libmoefr (%s). Set MOEFR_LIBRARY to the path of "
                      "libmoefr.so." % why)


def library_path():
    library()
    return _lib_path


def last_error(lib):
    msg = lib.aclGetRecentErrMsg()
    return msg.decode("utf-8", "replace") if msg else ""


def check(lib, status, function):
    if status != ACLNN_SUCCESS:
        msg = last_error(lib) or ("%s failed with status %d" % (function, status))
        raise MoefrError(msg, status, function)


class _Workspace:
    """A thread's workspace, kept between calls and grown when a call needs more, as
    torch_npu takes workspaces from its caching allocator. A fresh aclrtMalloc per call
    maps new pages every time: their faults (2 MiB huge pages, zeroed) cost more than a
    small GroupedMatmul, and two workers faulting at once wait on each other (bf16,
    2048 x 512 @ 512 x 512 in 8 groups, two threads on Zen 4: a median 6.5 ms a call,
    4.9 with the buffer kept; docs/BENCHMARKS.md). Freed when its thread ends, or at exit."""

    def __init__(self):
        self.ptr, self.size, self.lib = None, 0, None

    def release(self):
        if self.ptr is not None:
            self.lib.aclrtFree(self.ptr)
            self.ptr, self.size = None, 0

    def __del__(self):
        try:
            self.release()
        except Exception:  # at interpreter exit the library may already be gone
            pass


_tls = threading.local()  # .ws: this thread's _Workspace


def _release_main():
    ws = getattr(_tls, "ws", None)
    if ws is not None:
        ws.release()


atexit.register(_release_main)


def workspace(lib, size):
    """A workspace of at least size bytes for this thread (valid until its next call)."""
    ws = getattr(_tls, "ws", None)
    if ws is None:
        ws = _tls.ws = _Workspace()
    if ws.size < size:
        ws.release()
        ptr = ctypes.c_void_p(None)
        rc = lib.aclrtMalloc(ctypes.byref(ptr), size, ACL_MEM_MALLOC_HUGE_FIRST)
        if rc != ACL_SUCCESS:
            raise MoefrError(last_error(lib) or "aclrtMalloc failed with %d" % rc, rc, "aclrtMalloc")
        ws.ptr, ws.size, ws.lib = ptr, size, lib
    return ws.ptr


def run_two_phase(lib, phase1, phase2, args, function):
    """Phase 1 with args (+ workspaceSize, executor), this thread's kept workspace
    (workspace()), phase 2.

    The executor never outlives the call: phase 2 consumes it whatever its outcome; if
    phase 2 is never reached it is destroyed here. The workspace stays with the thread."""
    ws_size = ctypes.c_uint64(0)
    executor = ctypes.c_void_p(None)
    check(lib, phase1(*args, ctypes.byref(ws_size), ctypes.byref(executor)), function + "GetWorkspaceSize")
    ws = ctypes.c_void_p(None)
    if ws_size.value > 0:
        try:
            ws = workspace(lib, ws_size.value)
        except MoefrError:
            lib.aclDestroyAclOpExecutor(executor)
            raise
    check(lib, phase2(ws, ws_size.value, executor, None), function)
