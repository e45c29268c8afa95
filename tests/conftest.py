"""Shared test fixtures: a private compile cache so tests never depend on a user's cache."""

import os
import tempfile

os.environ.setdefault("FASTVEC_CACHE_DIR", os.path.join(tempfile.gettempdir(), "fastvec-test-cache"))
