"""``python -m framework`` is the ``staffroom`` command."""

from framework.surfaces.cli import main

main()
