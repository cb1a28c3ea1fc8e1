"""Plumbing every headstart package shares and none of them decides with: the error types,
durations, the field reader of every config (`common.fields`), YAML files, logging,
progress on stderr, output-path checks and runs spread over worker processes (`--jobs`).

This package imports nothing else of headstart's: every other package may build on it.
"""
