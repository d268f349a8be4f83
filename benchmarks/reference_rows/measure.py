"""One measurement of one reference row in this process: `measure.py FAMILY IMPL MODEL SEED`; prints its JSON.

Run by reference_table.py (through `reference_rows.run`), one process per (implementation, model, seed), with
the thread count in OMP/MKL and torch; the peak resident set of the process (imports included) is added.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the reference_rows package

from reference_rows import FAMILIES, family  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=list(FAMILIES))
    parser.add_argument("impl", choices=("reference", "project"))
    parser.add_argument("model")
    parser.add_argument("seed", type=int)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--paths", default="{}", help="JSON: option -> reference checkout")
    parser.add_argument("--max-gb", type=float, default=8.0, help="address-space limit: an allocation past it fails "
                        "in this process (reported) instead of starving the machine")
    args = parser.parse_args(argv)
    limit = int(args.max_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    np.random.seed(args.seed)
    fam = family(args.family)
    if args.model not in fam.MODELS:
        parser.error(f"{args.family} has no row {args.model!r}; rows: {', '.join(fam.MODELS)}")
    out = fam.measure(args.impl, args.model, json.loads(args.paths), args.batches, args.seed)
    out.setdefault("peak_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)  # a floor's: set before it
    print(json.dumps(out))


if __name__ == "__main__":
    main()
