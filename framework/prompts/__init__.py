"""Prompt templates (jinja2, StrictUndefined) and the sandbox they render in."""

from framework.prompts.environment import PromptRenderer

__all__ = ["PromptRenderer"]
