"""The checks of `headstart check`, pure: each one a function from what was observed in the
cluster (`observed.Observed`, the parsed configs) to a `result.Result`.

Must not: call the API, read files or the clock, log.
"""
