"""Knowledge layers (seed 001): journals, trackers, topic files, the shared library, search."""
