"""The images' lockfiles pin what the project declares. requirements/extender.lock is
compiled from extender.txt, requirements/headstart.lock from pyproject.toml's runtime
dependencies (torch aside: requirements/torch.txt pins it, and the lock is compiled
against that pin). Each declared dependency must be pinned `==` at a version inside its
declared range, and every pin must carry a sha256 hash, or `pip install --require-hashes`
in the Dockerfile refuses the lock. Offline: the files are read, nothing is resolved;
after a declared range or the torch pin changes, run the command at the top of the lock."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "requirements"
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    """One entry of a lock: `name==version --hash=... --hash=...`."""

    requirement: Requirement
    hashes: tuple[str, ...]

    @property
    def version(self) -> Version:
        (spec,) = self.requirement.specifier
        return Version(spec.version)


def read_lock(path: Path) -> dict[NormalizedName, Pin]:
    # Backslash continuations joined, each entry is one line; "# via" lines are comments.
    text = path.read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        requirement, *hashes = line.split("--hash=")
        pin = Pin(Requirement(requirement.strip()), tuple(h.strip() for h in hashes))
        pins[canonicalize_name(pin.requirement.name)] = pin
    return pins


def declared(lines: list[str]) -> list[Requirement]:
    return [Requirement(line) for line in lines]


def extender_txt() -> list[Requirement]:
    lines = (REQUIREMENTS / "extender.txt").read_text().splitlines()
    return declared([line for line in lines if line.strip() and not line.startswith("#")])


def torch_pin() -> Requirement:
    lines = (REQUIREMENTS / "torch.txt").read_text().splitlines()
    (line,) = [line for line in lines if line.strip() and not line.startswith("#")]
    return Requirement(line)


def pyproject_without_torch() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [r for r in declared(project["dependencies"]) if r.name != torch_pin().name]


LOCKS = {
    "extender.lock": extender_txt,
    "headstart.lock": pyproject_without_torch,
}


@pytest.mark.parametrize("lock, requirements", LOCKS.items(), ids=LOCKS.keys())
def test_each_declared_dependency_is_pinned_inside_its_range(lock, requirements):
    pins = read_lock(REQUIREMENTS / lock)
    for requirement in requirements():
        pin = pins.get(canonicalize_name(requirement.name))
        assert pin is not None, f"{lock} does not pin {requirement.name}"
        assert requirement.specifier.contains(pin.version, prereleases=True), (
            f"{lock} pins {pin.requirement}, outside the declared {requirement}"
        )


@pytest.mark.parametrize("lock", LOCKS.keys(), ids=LOCKS.keys())
def test_every_pin_is_exact_and_hashed(lock):
    pins = read_lock(REQUIREMENTS / lock)
    assert pins
    for pin in pins.values():
        assert [spec.operator for spec in pin.requirement.specifier] == ["=="], pin.requirement
        assert pin.hashes and all(SHA256.fullmatch(h) for h in pin.hashes), pin.requirement


@pytest.mark.parametrize(
    "lock, sources",
    [
        ("extender.lock", ["requirements/extender.txt"]),
        ("headstart.lock", ["pyproject.toml", "-c requirements/torch.txt"]),
    ],
    ids=["extender.lock", "headstart.lock"],
)
def test_each_lock_begins_with_the_command_that_regenerates_it(lock, sources):
    command = (REQUIREMENTS / lock).read_text().splitlines()[1].removeprefix("#").strip()
    assert command.startswith("uv pip compile ")
    assert "--generate-hashes" in command
    assert f"-o requirements/{lock}" in command
    for source in sources:
        assert f" {source} " in command


def test_torch_is_pinned_inside_the_declared_range_and_left_out_of_the_lock():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (torch,) = [r for r in declared(project["dependencies"]) if r.name == torch_pin().name]
    (spec,) = torch_pin().specifier
    assert spec.operator == "=="
    assert torch.specifier.contains(Version(spec.version), prereleases=True)
    # Without a hash for it, torch in the lock would make --require-hashes refuse it all.
    assert canonicalize_name(torch.name) not in read_lock(REQUIREMENTS / "headstart.lock")


def test_the_dockerfile_installs_the_default_image_from_its_lock():
    dockerfile = (REPO / "Dockerfile").read_text()
    stage = dockerfile.split("AS build\n", 1)[1].split("\nFROM ", 1)[0]
    assert "COPY requirements/headstart.lock requirements/torch.txt" in stage
    assert "pip install --require-hashes --no-deps -r headstart.lock" in stage
    assert "--index-url https://download.pytorch.org/whl/cpu -r torch.txt" in stage
    assert "pip install --no-deps . && pip check" in stage
