#!/usr/bin/python3
"""torch_ref.py - PyTorch CPU's usual backward of MoE finalize routing (index_select /
index_put in fp32) timed against libmoefr, loaded here through ctypes, on the same data.
Prints `RESULT torch_ms=<best> moefr_ms=<best> identical=<0|1>` (gradExpandedX bits)."""
import argparse
import ctypes
import time

import torch

ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_BF16, ACL_FORMAT_ND = 0, 1, 3, 27, 2
DT = {"fp32": (torch.float32, ACL_FLOAT), "bf16": (torch.bfloat16, ACL_BF16), "fp16": (torch.float16, ACL_FLOAT16)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shape", required=True)  # R,K,H
    ap.add_argument("--dtype", default="fp32", choices=sorted(DT))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    R, K, H = (int(v) for v in a.shape.split(","))
    tdt, adt = DT[a.dtype]
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(1234)
    gy = torch.randn(R, H, generator=g).to(tdt)
    x = torch.randn(R * K, H, generator=g).to(tdt)
    scales = torch.rand(R, K, generator=g).to(tdt)
    idx = torch.randperm(R * K, generator=g).to(torch.int32)  # entry i = r*K + k

    def torch_backward():
        rows = torch.arange(R * K) // K
        g32 = gy.float().index_select(0, rows)
        gx32 = torch.empty(R * K, H)
        gx32.index_put_((idx.long(),), g32 * scales.float().reshape(-1, 1))
        gs = (x.float().index_select(0, idx.long()) * g32).sum(1).reshape(R, K)
        return gx32.to(tdt), gs.to(tdt)

    lib = ctypes.CDLL(a.lib)
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.aclCreateTensor.restype = ctypes.c_void_p
    lib.aclCreateTensor.argtypes = [i64p, ctypes.c_uint64, ctypes.c_int, i64p, ctypes.c_int64, ctypes.c_int, i64p,
                                    ctypes.c_uint64, ctypes.c_void_p]
    lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]
    lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
    ws_fn = lib.aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize
    ws_fn.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int64] * 4 + [ctypes.c_void_p] * 2 + [
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_void_p)]
    run_fn = lib.aclnnMoeFinalizeRoutingV2Grad
    run_fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]

    def tensor(t, adtype):
        dims = (ctypes.c_int64 * t.dim())(*t.shape)
        return lib.aclCreateTensor(dims, t.dim(), adtype, None, 0, ACL_FORMAT_ND, dims, t.dim(),
                                   ctypes.c_void_p(t.data_ptr()))

    gx = torch.empty(R * K, H, dtype=tdt)
    gs = torch.empty(R, K, dtype=tdt)
    ts = [tensor(gy, adt), tensor(idx, ACL_INT32), tensor(x, adt), tensor(scales, adt), tensor(gx, adt),
          tensor(gs, adt)]
    ws = [None, 0]

    def moefr_backward():
        size = ctypes.c_uint64(0)
        ex = ctypes.c_void_p()
        rc = ws_fn(ts[0], ts[1], ts[2], ts[3], None, None, 0, 0, 0, 0, ts[4], ts[5], ctypes.byref(size),
                   ctypes.byref(ex))
        if rc == 0 and size.value > ws[1]:
            ws[0] = ctypes.create_string_buffer(size.value)
            ws[1] = size.value
        if rc == 0:
            rc = run_fn(ctypes.cast(ws[0], ctypes.c_void_p) if ws[0] is not None else None, size.value, ex, None)
        if rc != 0:
            raise SystemExit("moefr: status %d: %s" % (rc, lib.aclGetRecentErrMsg()))

    def best(fn, reps, warm):
        if warm:
            fn()
        out, res = [], None
        for _ in range(reps):
            t0 = time.perf_counter()
            res = fn()
            out.append(time.perf_counter() - t0)
        return min(out) * 1e3, res

    # PyTorch's run takes seconds, so it gets no warm-up and its last result is the reference.
    tms, (ref_gx, _) = best(torch_backward, a.reps, False)
    mms, _ = best(moefr_backward, max(a.reps, 3), True)
    bits = torch.int16 if tdt != torch.float32 else torch.int32
    same = torch.equal(ref_gx.view(bits), gx.view(bits))
    for t in ts:
        lib.aclDestroyTensor(t)
    print("RESULT torch_ms=%.3f moefr_ms=%.3f identical=%d" % (tms, mms, 1 if same else 0))


if __name__ == "__main__":
    main()
