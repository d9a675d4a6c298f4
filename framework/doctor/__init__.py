"""``staffroom doctor``: check a data folder, and repair what can be repaired without loss."""

from framework.doctor.checks import Diagnosis, Finding, diagnose
from framework.doctor.repair import repair

__all__ = ["Diagnosis", "Finding", "diagnose", "repair"]
