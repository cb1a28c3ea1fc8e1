"""The exception types every headstart package raises for faults a user can fix.

`HeadstartError` is what the CLI and the services turn into a one-line message and a
non-zero exit (or an HTTP 400); anything else escaping is a bug. Each error names
where the problem is (file, row, field) in its message.
"""

from __future__ import annotations


class HeadstartError(Exception):
    """A fault in the user's input or environment, with a message meant for them."""


class InputError(HeadstartError):
    """Bad input data: a trace, a series, a request body. The message names file/row/field."""


class ConfigError(HeadstartError):
    """A configuration or catalog file that does not validate. The message names file and field."""
