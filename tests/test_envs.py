"""The pinned environment: pyproject.toml, envs/requirements.txt and envs/environment.yaml agree."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _pins(lines):
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.\-]+)", line)
        assert m, f"not an exact pin: {line!r}"
        out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_three_dependency_lists_agree():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = list(meta["dependencies"])
    for extra in meta["optional-dependencies"].values():
        deps += extra
    pyproject = _pins(deps)
    req = _pins((REPO / "envs/requirements.txt").read_text().splitlines())
    env = yaml.safe_load((REPO / "envs/environment.yaml").read_text())
    pip_section = next(x for x in env["dependencies"] if isinstance(x, dict))["pip"]
    conda = _pins(pip_section)
    assert pyproject == req, "pyproject.toml and envs/requirements.txt differ"
    assert pyproject == conda, "pyproject.toml and envs/environment.yaml differ"
    py = next(x for x in env["dependencies"] if isinstance(x, str) and x.startswith("python"))
    assert py == "python=3.11"


def test_installed_versions_match_the_pins():
    from importlib.metadata import PackageNotFoundError, version

    req = _pins((REPO / "envs/requirements.txt").read_text().splitlines())
    wrong = {}
    for name, pin in req.items():
        try:
            got = version(name)
        except PackageNotFoundError:
            got = None
        if got != pin:
            wrong[name] = (pin, got)
    assert not wrong, f"installed versions differ from envs/requirements.txt: {wrong}"
