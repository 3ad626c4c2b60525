"""test_installed - `cmake --install` into a scratch prefix, then import moefr from
<prefix>/lib/python3/dist-packages with MOEFR_LIBRARY unset: it must find <prefix>/lib64 itself."""

import os
import shutil
import subprocess
import sys
import unittest

BUILD, WORK = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
# one scratch prefix per interpreter: CTest runs this test on Debian's Python and on the PyTorch 2 venv at once
WORK = os.path.join(WORK, os.path.basename(sys.prefix.rstrip("/")) or "root")

PROBE = r"""
import os, sys
import numpy as np
import moefr
assert "torch" not in sys.modules, "importing moefr imported torch"
prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(moefr.__file__).startswith(prefix + "/lib/python3/dist-packages/moefr/"), moefr.__file__
assert os.path.realpath(moefr.library_path()) == os.path.realpath(prefix + "/lib64/libmoefr.so"), moefr.library_path()
gy = np.arange(6, dtype=np.float32).reshape(3, 2)
gx, gs = moefr.moe_finalize_routing_grad(gy, np.array([2, 0, 1], np.int32))
assert gx.tolist() == [[2, 3], [4, 5], [0, 1]], gx
import torch
t = moefr.moe_finalize_routing_grad(torch.from_numpy(gy).bfloat16(), torch.tensor([2, 0, 1], dtype=torch.int32))[0]
assert t.dtype == torch.bfloat16 and t.float().tolist() == gx.tolist()
from moefr import torch_npu  # issue 15: the torch_npu front end ships with the package
assert os.path.realpath(torch_npu.__file__).startswith(prefix + "/lib/python3/dist-packages/moefr/")
assert torch_npu.npu_moe_compute_expert_tokens(torch.tensor([0, 0, 1, 1, 2, 2], dtype=torch.int32), 3).tolist() == [2, 4, 6]
print("installed moefr", moefr.version(), "from", moefr.__file__)
"""


class Installed(unittest.TestCase):
    def test_install_and_import(self):
        shutil.rmtree(WORK, ignore_errors=True)
        prefix = os.path.join(WORK, "prefix")
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pkg = os.path.join(prefix, "lib", "python3", "dist-packages", "moefr")
        self.assertTrue(os.path.isfile(os.path.join(pkg, "__init__.py")))
        self.assertFalse(os.path.exists(os.path.join(pkg, "__pycache__")))
        env = {k: v for k, v in os.environ.items() if k not in ("MOEFR_LIBRARY", "PYTHONPATH")}
        env["PYTHONPATH"] = os.path.join(prefix, "lib", "python3", "dist-packages")
        # Run from an unrelated directory so the source tree cannot be picked up by accident.
        r = subprocess.run([sys.executable, "-c", PROBE, prefix], capture_output=True, text=True,
                           env=env, cwd=WORK)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        print(r.stdout.strip())


if __name__ == "__main__":
    unittest.main()
