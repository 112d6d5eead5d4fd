"""What pyproject.toml cannot say: the source folder is app/, which holds the one package the wheel
installs, `adr_review` (never a top-level `app`, which would shadow a user's own); prompts/ and
templates/ stay at the top of the repository and ship inside the wheel as package data,
adr_review/_data/prompts and adr_review/_data/templates (app/adr_review/core/shipped.py finds them
there, or in a checkout at the top). A `packages` list in pyproject.toml cannot both discover the
packages and add mapped ones, hence this file; everything else is in pyproject.toml."""

from setuptools import find_packages, setup

# The data packages and the repository folders they are built from.
DATA = {"adr_review._data.prompts": "prompts", "adr_review._data.templates": "templates"}

setup(
    packages=[*find_packages(where="app", include=["adr_review", "adr_review.*"]), *DATA],
    package_dir={"": "app", **DATA},
    # Everything the code reads at run time; the golden eval's cases and ADR library stay in the
    # repository (`adr-review eval prompts` is a maintainer tool, run from a checkout).
    package_data={name: ["**/*"] for name in DATA},
    exclude_package_data={"adr_review._data.prompts": ["*/golden/*", "_golden/*"]},
    include_package_data=False,
)
