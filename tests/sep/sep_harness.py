"""What the tests/sep/compare_*.py scripts share: importing SEP and NumPy (or skipping), and running a backend's
tool with GPUWS_REQUIRE's rules."""
import os
import subprocess
import sys

REQUIRED = [s.strip() for s in os.environ.get("GPUWS_REQUIRE", "").split(",") if s.strip()]


def import_sep(suite):
    """(numpy, sep); exit 77 (skip) when either is missing, 1 when GPUWS_REQUIRE is set."""
    try:
        import numpy
        import sep
    except ImportError as e:
        if REQUIRED:
            print(f"{suite}: {e}: python3-sep and python3-numpy are required (GPUWS_REQUIRE is set)")
            sys.exit(1)
        print(f"{suite}: skipped: {e} (Debian: python3-sep, python3-numpy)")
        sys.exit(77)
    return numpy, sep


def run_backend(cmd, backend, name):
    """Runs one backend's tool: (True, result) when it ran; (False, None) when the backend is not available here and
    not required; (False, message) when it failed or a required backend is missing."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode == 77:
        if backend in REQUIRED:
            return False, f"FAIL {backend} is required but not available: {res.stderr.strip()}"
        return False, None
    if res.returncode != 0:
        return False, f"FAIL {name} [{backend}]: {res.stderr.strip()}"
    return True, res
