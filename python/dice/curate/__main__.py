import sys

from dice.curate.cli import main

sys.exit(main())
