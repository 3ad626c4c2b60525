"""`python -m moefr ...` and the `moefr` command of the pip package: the moefr CLI (`moefr --help`
lists its commands: operators on .npy files, `moefr bench`), run with the same arguments.

One option is the Python package's own: `--torch-npu-path` prints the directory that holds moefr's
opt-in CPU torch_npu, for PYTHONPATH (`PYTHONPATH=$(python -m moefr --torch-npu-path) python app.py`)."""

import os
import sys

from . import _paths


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--torch-npu-path"]:
        if len(argv) > 1:
            print("moefr: --torch-npu-path takes no arguments", file=sys.stderr)
            return 2
        print(_paths.torch_npu_dir())
        return 0
    exe = _paths.cli()
    if exe is None:
        print("moefr: the moefr CLI is not installed beside this package (looked in %s)"
              % ", ".join(_paths.cli_candidates()), file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(exe, [exe] + argv)


if __name__ == "__main__":
    sys.exit(main())
