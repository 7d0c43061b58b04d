"""Every test session compiles into a compile cache of its own (tessel.cache),
so that no test reads or fills the user's ~/.cache/tessel and each session
starts cold; subprocesses the tests start inherit it."""

import os
import shutil
import tempfile

_folder = None


def pytest_configure(config):
    global _folder
    _folder = tempfile.mkdtemp(prefix="tessel-test-cache-")
    os.environ["TESSEL_CACHE_DIR"] = _folder


def pytest_unconfigure(config):
    shutil.rmtree(_folder, ignore_errors=True)
