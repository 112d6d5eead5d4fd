"""What pyproject.toml cannot say: prompts/ and templates/ stay at the top of the repository and ship
inside the wheel as package data, app/_data/prompts and app/_data/templates (app/core/shipped.py finds
them there, or in a checkout at the top). A `packages` list in pyproject.toml cannot both discover the
app packages and add mapped ones, hence this file; everything else is in pyproject.toml."""

from setuptools import find_packages, setup

# The data packages and the repository folders they are built from.
DATA = {"app._data.prompts": "prompts", "app._data.templates": "templates"}

setup(
    packages=[*find_packages(include=["app", "app.*"]), *DATA],
    package_dir=DATA,
    # Everything the code reads at run time; the golden eval's cases and ADR library stay in the
    # repository (`adr-review eval prompts` is a maintainer tool, run from a checkout).
    package_data={name: ["**/*"] for name in DATA},
    exclude_package_data={"app._data.prompts": ["*/golden/*", "_golden/*"]},
    include_package_data=False,
)
