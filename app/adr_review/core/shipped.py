"""Where the files shipped with the code are: prompts/ and templates/.

They stay at the top of the repository, next to app/ (the source folder, which holds the package
`adr_review`), and a wheel carries them inside the package as package data, adr_review/_data/prompts
and adr_review/_data/templates (setup.py maps the folders there). Both places are found through
importlib.resources from the installed `adr_review` package, so `pip install .`, `pipx`,
the Docker image and a source checkout (editable install, tests) read the same files without a path
relative to the working directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

DATA_PACKAGE = "_data"  # adr_review/_data/<name> inside a wheel; the names below are its subfolders
Shipped = Literal["prompts", "templates"]


class NotOnDisk(RuntimeError):
    """The package was imported from somewhere that is not a folder (a zip file): the Jinja loaders
    and the prompt hash need real files."""


def shipped_dir(name: Shipped) -> Path:
    """The folder `name` of this copy of adr-review: the package data of an install, else the
    repository's own folder when the code runs from a checkout."""
    package = files("adr_review")
    if not isinstance(package, Path):
        raise NotOnDisk(f"adr-review's package is not a folder on disk ({package!r}); install it with pip")
    inside = package / DATA_PACKAGE / name
    return inside if inside.is_dir() else package.parent.parent / name  # <checkout>/app/adr_review
