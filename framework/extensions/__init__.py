"""The extension layer: hook points and their typed events, the context a hook gets, and the
registry of tools, hooks and prompt blocks that features and embedders register into."""
