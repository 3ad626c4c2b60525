"""Where the parts of an installed moefr lie, for the three layouts it comes in:
- the pip package: site-packages/moefr/{lib, bin, _torch_npu};
- `cmake --install`: <prefix>/lib/python3/dist-packages/moefr, <prefix>/{lib64, bin},
  <prefix>/lib/python3/torch_npu_shim;
- the source tree: python/moefr, build/tools/moefr, python/torch_npu_shim."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _layout():
    parent = os.path.dirname(HERE)
    if os.path.isdir(os.path.join(HERE, "lib")):
        return "pip", None
    if os.path.basename(parent) in ("dist-packages", "site-packages") and \
            os.path.basename(os.path.dirname(parent)) == "python3":
        return "cmake", os.path.normpath(os.path.join(parent, "..", "..", ".."))
    root = os.path.dirname(parent)
    if os.path.basename(parent) == "python" and os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        return "source", root
    return "unknown", None


def torch_npu_dir():
    """The directory to put on sys.path / PYTHONPATH for `import torch_npu` to give moefr's CPU torch_npu."""
    kind, root = _layout()
    if kind == "cmake":
        return os.path.join(root, "lib", "python3", "torch_npu_shim")
    if kind == "source":
        return os.path.join(root, "python", "torch_npu_shim")
    return os.path.join(HERE, "_torch_npu")


def cli_candidates():
    kind, root = _layout()
    if kind == "pip":
        return [os.path.join(HERE, "bin", "moefr")]
    if kind == "cmake":
        return [os.path.join(root, "bin", "moefr")]
    if kind == "source":
        return [os.path.join(root, "build", "tools", "moefr")]
    return []


def cli():
    for p in cli_candidates():
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def source_version():
    """The version in the source tree, read from include/moefr/moefr.h as CMake and pip read it
    (installed packages have moefr/_version.py, written by CMake from the same lines)."""
    kind, root = _layout()
    parts = {}
    try:
        with open(os.path.join(root or "", "include", "moefr", "moefr.h")) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[0] == "#define" and w[1].startswith("MOEFR_VERSION_"):
                    parts[w[1][len("MOEFR_VERSION_"):]] = w[2]
    except OSError:  # a partial copy of the tree
        pass
    if set(parts) != {"MAJOR", "MINOR", "PATCH"}:
        return "unknown"
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])
