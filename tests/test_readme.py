"""The README's two fresh-machine commands are the ones CI runs and the CLI accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from headstart.cli import build_parser

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text, flags=re.S)[:2]


def test_readme_opens_with_two_commands_that_install_torch_first():
    commands = readme_commands()
    assert len(commands) == 2
    for command in commands:
        assert command.startswith("pip install torch==2.13.0 && pip install -e ")


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_the_main_job_is_a_real_subcommand():
    main_job = readme_commands()[0].split(" && ")[-1]
    argv = shlex.split(main_job)
    assert argv[0] == "headstart"
    args = build_parser().parse_args(argv[1:])
    assert callable(args.func)
