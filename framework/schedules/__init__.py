"""Schedules: rooms, DMs and reflections that start on their own (schedules.yaml)."""
