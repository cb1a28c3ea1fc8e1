"""Plumbing every headstart package shares and none of them decides with: the error types,
durations, the field reader of every config (`common.fields`), YAML files, logging,
progress on stderr and output-path checks.

This package imports nothing else of headstart's: every other package may build on it.
"""
