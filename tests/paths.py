"""Where the tests find the repository, its sample data and ../shared."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
SHARED = REPO.parent / "shared"
