"""test_pip - the pip package as a user gets it: `pip wheel` of the checkout (scikit-build-core running
CMake), the wheel installed into a fresh venv, then, from an unrelated directory with MOEFR_LIBRARY and
PYTHONPATH unset:
- `import moefr` finds site-packages/moefr and loads moefr/lib/libmoefr.so.N (no other copy);
- one version everywhere: moefr.__version__, the loaded library's moefrVersion(), the wheel's metadata
  and include/moefr/moefr.h;
- the `moefr` entry point and `python -m moefr` run the CLI (`--help`, and an operator on .npy files
  whose result is checked against a hand-computed one);
- torch_npu is opt-in: no top-level torch_npu in site-packages, no .pth file, no entry point but the
  `moefr` script; `python -m moefr --torch-npu-path` names a directory holding torch_npu/.
Run with the PyTorch 2 venv's interpreter (it has pip and scikit-build-core); args: source dir, scratch dir."""

import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

SRC, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
del sys.argv[1:3]

PROBE = r"""
import os, sys, subprocess, tempfile, sysconfig
import numpy as np
import moefr
site = os.path.realpath(sysconfig.get_paths()["purelib"])
pkg = os.path.realpath(os.path.dirname(moefr.__file__))
assert pkg == os.path.join(site, "moefr"), (pkg, site)
lib = os.path.realpath(moefr.library_path())
assert lib.startswith(pkg + "/lib/libmoefr.so"), lib
print("version", moefr.__version__, moefr.version())
gy = np.arange(6, dtype=np.float32).reshape(3, 2)
gx, _ = moefr.moe_finalize_routing_grad(gy, np.array([2, 0, 1], np.int32))
assert gx.tolist() == [[2, 3], [4, 5], [0, 1]], gx
print("site", site)
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError("%s exited %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def header_version():
    with open(os.path.join(SRC, "include", "moefr", "moefr.h")) as f:
        text = f.read()
    return ".".join(re.search(r"#define MOEFR_VERSION_%s (\d+)" % k, text).group(1)
                    for k in ("MAJOR", "MINOR", "PATCH"))


class PipPackage(unittest.TestCase):
    def test_wheel_in_fresh_venv(self):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        wheels = os.path.join(WORK, "wheels")
        # --no-build-isolation: the build backend comes from this interpreter (no download); the CMake
        # build directory is kept between runs so a second run rebuilds only what changed.
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels,
             "--config-settings=build-dir=" + os.path.join(os.path.dirname(WORK), "pip-build"), SRC])
        (whl,) = glob.glob(os.path.join(wheels, "moefr-*.whl"))
        version = header_version()
        self.assertTrue(os.path.basename(whl).startswith("moefr-%s-" % version), whl)

        venv = os.path.join(WORK, "venv")
        # --system-site-packages: numpy (the package's one dependency) from the base interpreter when it has
        # it, else pip fetches it; moefr itself only from the wheel.
        base = getattr(sys, "_base_executable", sys.executable)
        run([base, "-m", "venv", "--system-site-packages", venv])
        py = os.path.join(venv, "bin", "python")
        run([py, "-m", "pip", "install", "-q", whl])

        env = {k: v for k, v in os.environ.items() if k not in ("MOEFR_LIBRARY", "PYTHONPATH")}
        out = run([py, "-c", PROBE], env=env, cwd=WORK)
        self.assertIn("version %s %s" % (version, version), out)
        site = out.split("site ", 1)[1].strip()

        # opt-in torch_npu: nothing importable as torch_npu, no .pth, one console script
        self.assertFalse(os.path.exists(os.path.join(site, "torch_npu")))
        for p in os.listdir(site):
            if p.endswith(".pth"):
                with open(os.path.join(site, p)) as f:
                    self.assertNotIn("moefr", f.read(), p)
        (info,) = glob.glob(os.path.join(site, "moefr-%s.dist-info" % version))
        with open(os.path.join(info, "entry_points.txt")) as f:
            eps = f.read()
        self.assertEqual(re.findall(r"^\[(.*)\]$", eps, re.M), ["console_scripts"])
        self.assertEqual(re.findall(r"^(\S+) =", eps, re.M), ["moefr"])
        r = subprocess.run([py, "-c", "import torch_npu"], capture_output=True, text=True, env=env, cwd=WORK)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No module named 'torch_npu'", r.stderr)
        shim = run([py, "-m", "moefr", "--torch-npu-path"], env=env, cwd=WORK).strip()
        self.assertTrue(os.path.isfile(os.path.join(shim, "torch_npu", "__init__.py")), shim)
        self.assertTrue(os.path.realpath(shim).startswith(os.path.realpath(site) + "/moefr/"), shim)

        # the CLI, through the entry point and through python -m: --help, then an operator on .npy files
        script = os.path.join(venv, "bin", "moefr")
        self.assertIn("usage: moefr", run([script, "--help"], env=env, cwd=WORK))
        self.assertIn("usage: moefr", run([py, "-m", "moefr", "--help"], env=env, cwd=WORK))
        import numpy as np
        gy = os.path.join(WORK, "gy.npy")
        idx = os.path.join(WORK, "idx.npy")
        out = os.path.join(WORK, "out")
        np.save(gy, np.arange(6, dtype=np.float32).reshape(3, 2))
        np.save(idx, np.array([2, 0, 1], np.int32))
        run([script, "grad", "--grad-y", gy, "--expanded-row-idx", idx, "--out", out], env=env, cwd=WORK)
        self.assertEqual(np.load(os.path.join(out, "grad_expanded_x.npy")).tolist(), [[2, 3], [4, 5], [0, 1]])


if __name__ == "__main__":
    unittest.main()
