"""``python -m oclclust.compare [flags]``: oclclust.cli.compare's main."""
import sys

from ..cli.compare import main

if __name__ == "__main__":
    sys.exit(main())
