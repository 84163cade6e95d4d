"""Runs a page's code blocks in turn in one namespace, as a reader pastes them
(tests/test_docs.py): ``python doc_blocks.py BLOCKS.json NAME``.  Prints each
block's seconds on a last line ``BLOCK_SECONDS [s0, s1, ...]``; a block that
raises ends the run with its traceback (named NAME[i], its lines the block's)."""
import json
import sys
import time


def main(path, name):
    with open(path) as f:
        blocks = json.load(f)
    namespace = {"__name__": "__main__"}
    seconds = []
    for i, code in enumerate(blocks):
        start = time.perf_counter()
        exec(compile(code, f"{name}[{i}]", "exec"), namespace)
        seconds.append(time.perf_counter() - start)
    sys.stdout.flush()     # the blocks' own output first, then the line in one write
    sys.stdout.write("BLOCK_SECONDS " + json.dumps(seconds) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":   # Dask's LocalCluster starts its workers by spawning
    main(*sys.argv[1:3])
