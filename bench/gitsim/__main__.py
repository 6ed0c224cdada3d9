"""`python -m bench.gitsim`: see bench/gitsim/run.py."""

from bench.gitsim.run import main

raise SystemExit(main())
