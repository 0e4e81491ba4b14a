"""`python -m dice`: the same command line as `dice` (dice.cli)."""

import sys

from dice.cli import main

if __name__ == "__main__":
    sys.exit(main())
