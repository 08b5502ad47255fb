"""WorkflowGen benchmark (Car dealerships, Arctic stations): ``lipspark bench`` as a script.

    python benchmarks/workflowgen.py [--quick] [--only car_dealership arctic_dense] [--out DIR]

See :mod:`lipspark.bench` for the method; results land in benchmarks/results/workflowgen/.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
