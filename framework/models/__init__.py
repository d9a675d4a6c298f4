"""Chat models behind one factory: the offline simulator, a scripted double, real providers."""

from framework.models.factory import ModelFactory, build_model, model_label
from framework.models.scripted import ScriptedChatModel
from framework.models.simulator import SimulatedChatModel

__all__ = [
    "ModelFactory",
    "ScriptedChatModel",
    "SimulatedChatModel",
    "build_model",
    "model_label",
]
