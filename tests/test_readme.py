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


# CPU torch on any machine: only PyTorch's CPU index is consulted for torch, so pip cannot
# fall back to PyPI's CUDA build; --no-deps leaves torch's dependencies to the next pip.
CPU_TORCH = "pip install torch==2.13.0 --no-deps --index-url https://download.pytorch.org/whl/cpu"


def test_readme_opens_with_two_commands_that_install_cpu_torch_first():
    text = (REPO / "README.md").read_text()
    assert text.split("\n```sh\n", 1)[0] == "# headstart\n"  # nothing before them
    commands = readme_commands()
    assert len(commands) == 2
    for command in commands:
        assert "\n" not in command
        assert command.startswith(f"{CPU_TORCH} && pip install -e ")
    assert commands[0].endswith(" && pip install -e . && headstart demo")
    assert commands[1].endswith(" && pip install -e '.[dev]' && pytest")


def test_the_image_installs_the_same_cpu_torch():
    # The default image installs requirements/torch.txt from the CPU index (its other
    # dependencies come hash-locked from requirements/headstart.lock).
    dockerfile = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    (line,) = [ln for ln in dockerfile.splitlines() if "-r torch.txt" in ln]
    words = shlex.split(line[line.rindex("pip install --require-hashes"):])
    assert words[words.index("--index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    text = (REPO / "requirements" / "torch.txt").read_text().replace("\\\n", " ")
    pins = [ln.split()[0] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    # The README's torch==2.13.0 from the same index is this build on Linux.
    assert pins == ["torch==2.13.0+cpu"]


def test_the_image_copies_every_package_the_project_installs():
    """A package missing from the Dockerfile's COPY lines imports fine here and fails at
    the image's first `headstart` run."""
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.removesuffix("*") for p in patterns}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (REPO / "Dockerfile").read_text(), re.M))
    assert copied == packages
    assert all((REPO / package / "__init__.py").is_file() for package in packages)


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_the_main_job_is_a_real_subcommand():
    main_job = readme_commands()[0].split(" && ")[-1]
    argv = shlex.split(main_job)
    assert argv[0] == "headstart"
    args = build_parser().parse_args(argv[1:])
    assert callable(args.func)
