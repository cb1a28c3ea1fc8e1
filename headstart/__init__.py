"""The `headstart` command: one console script whose subcommands live in each package."""
