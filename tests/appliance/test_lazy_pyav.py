"""Importing the appliance loads no PyAV: a machine that only benchmarks or analyses (a GPU test
machine without PyAV, a bench run) imports it, and PyAV comes with the first recording."""
import subprocess
import sys


def test_importing_the_appliance_loads_no_pyav():
    code = "import sys, edge_app.appliance.appliance; print('av' in sys.modules)"
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert answer.stdout.strip() == "False", answer.stderr
