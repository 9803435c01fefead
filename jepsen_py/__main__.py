"""`python -m jepsen_py`: the same command line as the `jepsen-py` script."""

from jepsen_py.cli import main

raise SystemExit(main())
