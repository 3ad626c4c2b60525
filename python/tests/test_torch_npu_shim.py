"""test_torch_npu_shim - the opt-in CPU torch_npu package (python/torch_npu_shim, issue 22 part 2):
`import torch_npu` re-exports moefr.torch_npu (looked up dynamically), installs a CPU torch.npu,
Tensor.npu() and npu_format_cast, and raises one error class (an AttributeError and a
NotImplementedError) for everything else. Run from the source tree; test_install.sh imports it
from the install tree through `set_env.sh --torch-npu`."""

import os
import sys
import threading
import time
import unittest

import moefr_testlib as tl  # noqa: F401  (puts the source-tree moefr first on sys.path, seeds)

sys.path.insert(0, os.path.normpath(os.path.join(tl.HERE, "..", "torch_npu_shim")))

import torch  # noqa: E402
import torch_npu  # noqa: E402
from moefr import torch_npu as impl  # noqa: E402

Err = torch_npu.MoefrNotProvidedError


class ReExport(unittest.TestCase):
    def test_from_shim_dir(self):
        self.assertTrue(torch_npu.__file__.endswith(os.path.join("torch_npu_shim", "torch_npu", "__init__.py")))

    def test_every_moefr_function(self):
        for name in impl.__all__:
            self.assertIs(getattr(torch_npu, name), getattr(impl, name), name)
            self.assertIn(name, torch_npu.__all__)
            self.assertIn(name, dir(torch_npu))
        self.assertIs(torch_npu.MoefrError, impl.MoefrError)
        from torch_npu import npu_moe_init_routing_v2
        self.assertIs(npu_moe_init_routing_v2, impl.npu_moe_init_routing_v2)

    def test_dynamic(self):
        """A function added to moefr.torch_npu after the import appears (npu_* and _npu_* names,
        with or without __all__), and disappears with it."""
        def npu_moe_added_later(x):
            return x + 1

        def _npu_moe_added_later(x):
            return x + 2
        self.assertFalse(hasattr(torch_npu, "npu_moe_added_later"))
        impl.npu_moe_added_later = npu_moe_added_later
        impl._npu_moe_added_later = _npu_moe_added_later
        try:
            self.assertIs(torch_npu.npu_moe_added_later, npu_moe_added_later)
            self.assertIs(torch_npu._npu_moe_added_later, _npu_moe_added_later)
            self.assertIn("npu_moe_added_later", dir(torch_npu))
        finally:
            del impl.npu_moe_added_later, impl._npu_moe_added_later
        self.assertFalse(hasattr(torch_npu, "npu_moe_added_later"))
        self.assertFalse(hasattr(torch_npu, "_npu_moe_added_later"))

    def test_only_functions(self):
        """moefr.torch_npu's helpers and imported modules are not torch_npu's."""
        for name in ("torch", "_routing", "_check", "_cpu"):
            self.assertTrue(hasattr(impl, name), name)
            self.assertFalse(hasattr(torch_npu, name), name)

    def test_runs(self):
        """A call through the shim computes what torch_npu computes (a reference loop)."""
        g = torch.Generator().manual_seed(tl.SEED)
        N, K, H, E = 13, 3, 5, 7
        x = torch.randn(N, H, generator=g)
        ids = torch.randint(0, E, (N, K), generator=g, dtype=torch.int32)
        out, idx = torch_npu.npu_moe_token_permute(x.npu(), ids.npu())
        flat = ids.reshape(-1).tolist()
        order = sorted(range(N * K), key=lambda j: (flat[j], j))
        for i, j in enumerate(order):
            self.assertEqual(idx[j].item(), i)
            self.assertTrue(torch.equal(out[i], x[j // K]))


class Errors(unittest.TestCase):
    def test_class(self):
        self.assertTrue(issubclass(Err, AttributeError))
        self.assertTrue(issubclass(Err, NotImplementedError))
        self.assertTrue(issubclass(Err, RuntimeError))  # NotImplementedError's base

    def test_torch_npu_missing(self):
        for name in ("npu_moe_distribute_dispatch", "npu_fusion_attention", "npu_rms_norm"):
            with self.assertRaises(Err) as cm:
                getattr(torch_npu, name)
            msg = str(cm.exception)
            self.assertIn("torch_npu." + name, msg)
            self.assertIn("not provided by moefr", msg)
            self.assertFalse(hasattr(torch_npu, name))
            self.assertIsNone(getattr(torch_npu, name, None))
            for cls in (AttributeError, NotImplementedError):
                with self.assertRaises(cls):
                    getattr(torch_npu, name)

    def test_torch_npu_call_missing(self):
        with self.assertRaises(NotImplementedError) as cm:
            torch_npu.npu_moe_distribute_combine(torch.zeros(1))
        self.assertIn("torch_npu.npu_moe_distribute_combine", str(cm.exception))

    def test_torch_npu_npu_missing(self):
        for name in ("memory_allocated", "max_memory_allocated", "mem_get_info", "NPUGraph", "graph",
                     "get_device_properties", "FloatTensor"):
            with self.assertRaises(Err) as cm:
                getattr(torch.npu, name)
            self.assertIn("torch.npu." + name, str(cm.exception))
            self.assertIn("not provided by moefr", str(cm.exception))
            self.assertFalse(hasattr(torch.npu, name))
            self.assertFalse(hasattr(torch_npu.npu, name))
        with self.assertRaises(NotImplementedError):
            torch.npu.memory_allocated()

    def test_from_import(self):
        with self.assertRaises(ImportError):
            exec("from torch_npu import npu_not_a_function")
        with self.assertRaises(ImportError):
            exec("import torch_npu.testing")

    def test_readme_named(self):
        """The message points at the README, which exists in the tree the package came from."""
        from torch_npu import _not_provided
        self.assertIn(_not_provided.README, str(Err("torch.npu.x")))
        self.assertTrue(os.path.isfile(_not_provided.README))


class TorchNpu(unittest.TestCase):
    def test_installed(self):
        self.assertIs(torch.npu, torch_npu.npu)
        self.assertIs(sys.modules["torch.npu"], torch.npu)
        import torch.npu as tn
        self.assertIs(tn, torch.npu)
        from torch.npu import Event, Stream  # noqa: F401

    def test_device(self):
        npu = torch.npu
        self.assertFalse(npu.is_available())
        self.assertEqual(npu.device_count(), 1)
        self.assertTrue(npu.is_initialized())
        # this process set no MOEFR_SOC: the package emulates Atlas A2 (the product the MoE code targets)
        import moefr
        if os.environ.get("MOEFR_SOC") is None:
            self.assertEqual(moefr.soc(), "ascend910b")
        self.assertEqual(npu.get_device_name(), {"ascend910b": "Ascend910B2", "ascend950": "Ascend950PR"}[moefr.soc()])
        self.assertEqual(npu.current_device(), 0)
        try:
            npu.set_device(1)  # a rank's own index in a CPU expert-parallel run
            self.assertEqual(npu.current_device(), 1)
            npu.set_device("npu:0")
            self.assertEqual(npu.current_device(), 0)
            with npu.device(3):
                self.assertEqual(npu.current_device(), 3)
                with npu.device(None):
                    self.assertEqual(npu.current_device(), 3)
            self.assertEqual(npu.current_device(), 0)
            npu.set_device(2)
            seen = []
            t = threading.Thread(target=lambda: seen.append(npu.current_device()))
            t.start()
            t.join()
            self.assertEqual(seen, [0])  # per thread, as torch.cuda's
            self.assertEqual(npu.current_device(), 2)
        finally:
            npu.set_device(0)
        for bad in ("cuda:0", "npu:x", -2, 1.5):
            with self.assertRaises(ValueError):
                npu.set_device(bad)
        npu.synchronize()
        npu.synchronize(0)
        npu.empty_cache()
        npu.init()

    def test_seed(self):
        torch.npu.manual_seed(tl.SEED)
        a = torch.rand(4)
        torch.npu.manual_seed_all(tl.SEED)
        self.assertTrue(torch.equal(a, torch.rand(4)))

    def test_streams(self):
        npu = torch.npu
        d = npu.default_stream()
        self.assertIs(npu.current_stream(), d)
        self.assertIs(npu.default_stream(0), d)
        s = npu.Stream()
        self.assertIsNot(s, d)
        self.assertTrue(s.query())
        s.synchronize()
        with npu.stream(s):
            self.assertIs(npu.current_stream(), s)
            with npu.stream(None):
                self.assertIs(npu.current_stream(), s)
            other = []
            t = threading.Thread(target=lambda: other.append(npu.current_stream()))
            t.start()
            t.join()
            self.assertIs(other[0], d)  # per thread
        self.assertIs(npu.current_stream(), d)
        with s:
            self.assertIs(npu.current_stream(), s)
        self.assertIs(npu.current_stream(), d)
        npu.set_stream(s)
        try:
            self.assertIs(npu.current_stream(), s)
        finally:
            npu.set_stream(d)
        # what MindSpeed's alltoall_dispatch and vllm-ascend's dispatchers call (vllm-ascend's
        # moe_comm_method annotates fields as `torch.npu.Event | None`)
        self.assertEqual((npu.Event | None).__args__, (npu.Event, type(None)))
        self.assertIsInstance(npu.current_stream().record_event(), npu.Event)
        npu.current_stream().synchronize()
        s.wait_stream(npu.current_stream())
        e = s.record_event()
        self.assertIsInstance(e, npu.Event)
        d.wait_event(e)
        with self.assertRaises(TypeError):
            d.wait_event(s)

    def test_events(self):
        npu = torch.npu
        a, b = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
        with self.assertRaises(RuntimeError):
            a.elapsed_time(b)  # not recorded
        a.record()
        time.sleep(0.03)
        b.record(npu.current_stream())
        ms = a.elapsed_time(b)
        self.assertGreaterEqual(ms, 25.0)
        self.assertLess(ms, 5000.0)
        self.assertTrue(b.query())
        b.synchronize()
        b.wait()
        b.wait(npu.Stream())
        c = npu.Event()
        c.record()
        with self.assertRaises(RuntimeError):
            a.elapsed_time(c)  # no timing
        with self.assertRaises(TypeError):
            c.record("stream")

    def test_tensor_npu(self):
        x = torch.randn(3, 4)
        for args, kw in (((), {}), ((0,), {}), (("npu",), {}), (("npu:0",), {}), ((), {"non_blocking": True}),
                         ((None,), {})):
            for y in (x.npu(*args, **kw), torch.Tensor.npu(x, *args, **kw)):
                self.assertIsNot(y, x, (args, kw))  # a copy, as the host-to-NPU move gives
                self.assertTrue(torch.equal(y, x))
                self.assertNotEqual(y.data_ptr(), x.data_ptr())
        w = torch.randn(3, 4, requires_grad=True)
        (w.npu() * 2).sum().backward()  # the gradient reaches the host tensor
        self.assertTrue(torch.equal(w.grad, torch.full((3, 4), 2.0)))
        y = torch.randn(2, 3, 4, 5).npu(memory_format=torch.channels_last)
        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last))
        with self.assertRaises(ValueError):
            x.npu("cuda")
        m = torch.nn.Linear(2, 2)
        self.assertIs(m.npu(), m)
        self.assertEqual(m.weight.device.type, "cpu")

    def test_config(self):
        """op-plugin's SwiGlu tests set torch.npu.config.allow_internal_format at import."""
        self.assertFalse(torch.npu.config.allow_internal_format)
        torch.npu.config.allow_internal_format = True
        try:
            self.assertTrue(torch.npu.config.allow_internal_format)
        finally:
            torch.npu.config.allow_internal_format = False
        self.assertTrue(hasattr(torch.npu, "config"))

    def test_format_cast(self):
        x = torch.randn(4, 4)
        self.assertIs(torch_npu.npu_format_cast(x, 29), x)
        self.assertIs(torch_npu.npu_format_cast_(x, 2), x)
        with self.assertRaises(TypeError):
            torch_npu.npu_format_cast([1.0], 2)


SHIM = os.path.normpath(os.path.join(tl.HERE, "..", "torch_npu_shim"))
SRC_PY = os.path.normpath(os.path.join(tl.HERE, ".."))


def run_py(code, env=None, path=None):
    """code in a fresh interpreter (this one) with the shim and the source-tree moefr on sys.path."""
    import subprocess
    e = dict(os.environ)
    e.update(env or {})
    e["PYTHONPATH"] = os.pathsep.join(path if path is not None else [SHIM, SRC_PY])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


class WhatMoeCodeReads(unittest.TestCase):
    def test_device_name_follows_soc(self):
        for soc, name in (("ascend910b", "Ascend910B2"), ("ascend950", "Ascend950PR"), ("", "Ascend950PR")):
            r = run_py("import torch, torch_npu, moefr; print(torch.npu.get_device_name(), moefr.soc())",
                       {"MOEFR_SOC": soc})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), [name, "ascend910b" if soc == "ascend910b" else "ascend950"])

    def test_misc(self):
        self.assertTrue(torch.npu.is_bf16_supported())
        self.assertIsNone(torch.npu.set_compile_mode(jit_compile=False))
        with torch.npu.amp.autocast(dtype=torch.bfloat16):
            y = torch.randn(3, 4) @ torch.randn(4, 2)
        self.assertEqual(y.dtype, torch.bfloat16)
        with torch.npu.amp.autocast(enabled=False, dtype=torch.bfloat16):
            self.assertEqual((torch.randn(3, 4) @ torch.randn(4, 2)).dtype, torch.float32)
        import torch.npu.amp as amp  # noqa: F401  (the import form works too)
        for name in ("memory_allocated", "max_memory_allocated", "NPUGraph", "graph", "get_device_properties"):
            with self.assertRaises(Err):
                getattr(torch.npu, name)
        with self.assertRaises(Err):
            torch.npu.amp.GradScaler

    def test_integer_devices_are_the_cpu(self):
        """vllm-ascend: torch.tensor(..., device=torch.npu.current_device())."""
        d = torch.npu.current_device()
        self.assertEqual(torch.tensor([1, 2], device=d).device.type, "cpu")
        self.assertEqual(torch.zeros(2, device=0).device.type, "cpu")
        self.assertEqual(torch.arange(3, device=0).tolist(), [0, 1, 2])
        x = torch.ones(2)
        self.assertEqual(x.to(0).device.type, "cpu")
        self.assertEqual(x.to(0, torch.float16).dtype, torch.float16)
        self.assertEqual(x.new_zeros(3, device=0).device.type, "cpu")
        self.assertEqual(torch.nn.Linear(2, 2).to(0).weight.device.type, "cpu")
        self.assertEqual(x.to(torch.float64).dtype, torch.float64)  # a dtype stays a dtype

    def test_npu_strings_opt_in(self):
        code = ("import torch, torch_npu\n"
                "print(torch.zeros(2, device='npu').device, torch.ones(1, device='npu:0').device,"
                " torch.ones(1).to('npu').device)\n"
                "ok = torch.npu.map_npu_to_cpu()\n"
                "print(torch.empty(1, device=torch.device('npu')).device if ok else 'cpu')\n")
        r = run_py(code, {"MOEFR_NPU_DEVICE": "cpu"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["cpu"] * 4)
        r = run_py("import torch, torch_npu; torch.zeros(1, device='npu')", {"MOEFR_NPU_DEVICE": ""})
        self.assertNotEqual(r.returncode, 0)  # not switched on: PyTorch's own refusal

    @unittest.skipUnless(tl.torch_ops(), "PyTorch >= 2.4: torch.library.impl by device type")
    def test_npu_kernels_serve_the_cpu(self):
        """In the mode, a kernel a project registers for the NPU backend runs for our (CPU) tensors; without
        it, the CPU's own kernel runs."""
        code = ("import torch, torch_npu\n"
                "torch.library.define('proj::f', '(Tensor x) -> Tensor')\n"
                "torch.library.impl('proj::f', 'cpu')(lambda x: x + 1)\n"
                "torch.library.impl('proj::f', 'npu')(lambda x: x + 100)\n"
                "print(int(torch.ops.proj.f(torch.zeros(1, device='npu'))))\n")
        r = run_py(code, {"MOEFR_NPU_DEVICE": "cpu"})
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(r.stdout.split(), ["100"])
        code = code.replace("device='npu'", "device='cpu'").replace("torch.library.impl('proj::f', 'npu')",
                                                                    "(lambda f: f)")
        r = run_py(code, {"MOEFR_NPU_DEVICE": ""})
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(r.stdout.split(), ["1"])

    @unittest.skipUnless(tl.torch_ops(), "PyTorch >= 2.4: torch.compile")
    def test_npu_strings_and_compile(self):
        """The mode renames PyTorch's PrivateUse1 backend "npu"; torch.compile must still trace modules
        (it reads Tensor.is_npu then) and moefr's operators, and the NPU stays unavailable."""
        code = ("import torch, torch_npu\n"
                "m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 8)).to('npu')\n"
                "f = torch.compile(lambda x: torch_npu.npu_swiglu(m(x)).sum(), fullgraph=True)\n"
                "x = torch.randn(3, 4, device='npu', requires_grad=True)\n"
                "f(x).backward()\n"
                "e = x.grad.clone(); x.grad = None\n"
                "(torch_npu.npu_swiglu(m(x)).sum()).backward()\n"
                "print(torch.equal(e, x.grad), torch.npu.is_available(), x.is_npu, x.device.type)\n")
        r = run_py(code, {"MOEFR_NPU_DEVICE": "cpu"})
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(r.stdout.split(), ["True", "False", "False", "cpu"])


class Constants(unittest.TestCase):
    def test_custom_dtypes(self):
        """torch_npu's dtype constants are 256 + the aclDataType value (the header's enum, read here)."""
        import re
        with open(os.path.join(tl.HERE, "..", "..", "include", "acl", "acl_base.h")) as f:
            acl = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"\b(ACL_[A-Z0-9_]+) = (-?\d+)", f.read()))
        names = {"hifloat8": "ACL_HIFLOAT8", "float8_e5m2": "ACL_FLOAT8_E5M2", "float8_e4m3fn": "ACL_FLOAT8_E4M3FN",
                 "float8_e8m0fnu": "ACL_FLOAT8_E8M0", "float4_e2m1fn_x2": "ACL_FLOAT4_E2M1",
                 "float4_e1m2fn_x2": "ACL_FLOAT4_E1M2", "int4": "ACL_INT4", "bfloat16": "ACL_BF16",
                 "float32": "ACL_FLOAT", "int8": "ACL_INT8", "complex32": "ACL_COMPLEX32"}
        for name, enum in names.items():
            self.assertEqual(getattr(torch_npu, name), 256 + acl[enum], name)
            self.assertIn(name, torch_npu.__all__)

    def test_transfer_to_npu(self):
        code = ("import torch, torch_npu\n"
                "from torch_npu.contrib import transfer_to_npu\n"
                "m = torch.nn.Linear(3, 3).cuda() if False else torch.nn.Linear(3, 3).to('cuda')\n"
                "x = torch.zeros(2, 3, device='cuda:0')\n"
                "print(m.weight.device.type, x.device.type, torch.ones(1).to(torch.device('cuda')).device.type,"
                " torch.zeros(1, device='npu').device.type)\n")
        r = run_py(code)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(r.stdout.split(), ["cpu"] * 4)
        # torch.cuda's streams and devices become torch.npu's (Megatron's dispatcher creates torch.cuda.Stream())
        code = ("import torch, torch_npu\n"
                "from torch_npu.contrib import transfer_to_npu\n"
                "s = torch.cuda.Stream()\n"
                "with torch.cuda.stream(s):\n"
                "    y = torch.ones(2, device='cuda') * 2\n"
                "torch.cuda.current_stream().wait_stream(s)\n"
                "torch.cuda.synchronize()\n"
                "print(type(s).__module__, torch.cuda.current_device(), torch.cuda.is_available(), y.sum().item())\n")
        r = run_py(code)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(r.stdout.split(), ["torch_npu.npu", "0", "False", "4.0"])
        with self.assertRaises(Err):
            import torch_npu.contrib as c
            c.something_else


class RealTorchNpu(unittest.TestCase):
    def fake_install(self, body):
        """A directory holding a stand-in for Ascend's torch_npu (a top-level package)."""
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="real_torch_npu_")
        self.addCleanup(shutil.rmtree, d, True)
        os.makedirs(os.path.join(d, "torch_npu"))
        with open(os.path.join(d, "torch_npu", "__init__.py"), "w") as f:
            f.write(body)
        return d

    def test_shim_refuses(self):
        real = self.fake_install("REAL = True\n")
        r = run_py("import torch_npu", path=[SHIM, SRC_PY, real])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Ascend's torch_npu is installed", r.stderr)
        self.assertIn(real, r.stderr)
        r = run_py("import moefr; moefr.use_torch_npu()", path=[SRC_PY, real])
        self.assertIn("refuses to load", r.stderr)

    @unittest.skipUnless(tl.torch_ops(), "PyTorch >= 2.4: torch.ops.npu")
    def test_cpu_kernels_for_the_installed_operators(self):
        """Where Ascend's torch_npu defines the operators (here a stand-in defining two with op-plugin's
        schema and one with another), moefr adds CPU kernels to those whose schema it shares."""
        real = self.fake_install(
            "import torch\n"
            "_lib = torch.library.Library('npu', 'DEF')\n"
            "_lib.define('npu_swiglu(Tensor self, int dim=-1) -> Tensor')\n"
            "_lib.define('npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor')\n"
            "_lib.define('npu_moe_compute_expert_tokens(Tensor sorted_experts, int num_experts=1) -> Tensor')\n")
        code = ("import torch, moefr\n"
                "done, skipped = moefr.register_cpu_kernels()\n"
                "x = torch.randn(3, 8, requires_grad=True)\n"
                "y = torch.ops.npu.npu_swiglu(x)\n"
                "a, b = x.detach().double().chunk(2, -1)\n"
                "want = torch.nn.functional.silu(a) * b\n"
                "assert (y.double() - want).abs().max() < 1e-6, 'values'\n"
                "y.sum().backward()\n"
                "assert x.grad is not None\n"
                "print(sorted(skipped))\n"
                "print('npu::npu_swiglu' in done, 'npu::npu_moe_init_routing_v2' in done)\n")
        r = run_py(code, path=[SRC_PY, real])
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(lines[0], "['npu::npu_moe_compute_expert_tokens']")
        self.assertEqual(lines[1], "True True")


if __name__ == "__main__":
    unittest.main()
