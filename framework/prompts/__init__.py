"""Prompt templates (jinja2, StrictUndefined) and the assembly of a turn's context."""

from framework.prompts.environment import PromptRenderer

__all__ = ["PromptRenderer"]
