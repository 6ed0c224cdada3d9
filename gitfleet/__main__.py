import sys

from gitfleet.cli import main

sys.exit(main())
