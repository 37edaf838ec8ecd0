#!/usr/bin/env python3
"""Fan an `unpinned sweep` out over a Dask cluster.

Usage: sweep_dask.py SCHEDULER_ADDRESS UNPINNED_BINARY < points.json > results.json

points.json is a JSON list; each item is the argument list of one `unpinned run-point`
invocation. Each point runs as one task on a worker (`subprocess`: the binary must exist at
the same path on every worker). The output is the JSON list of the invocations' standard
outputs, in the order of the points. A failing point fails the sweep with its stderr.
"""
import json
import subprocess
import sys

from distributed import Client


def run_point(binary, args):
    p = subprocess.run([binary, "run-point", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"unpinned run-point {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    address, binary = sys.argv[1], sys.argv[2]
    points = json.load(sys.stdin)
    with Client(address, timeout="30s") as client:
        futures = [client.submit(run_point, binary, args, pure=False) for args in points]
        outputs = client.gather(futures)
    json.dump(outputs, sys.stdout)


if __name__ == "__main__":
    main()
