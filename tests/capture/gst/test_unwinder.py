"""GStreamer in the process must not break C++ exceptions of the other native libraries.

Debian's libgstreamer links libunwind, and PyGObject loads it into the global symbol scope;
ONNX Runtime's and OpenCV's C++ exceptions then unwound through libunwind's ``_Unwind_Resume``
and aborted the process (a corrupt model file killed an appliance with a GStreamer camera).
Each check runs in its own interpreter because the failure is an abort, not an exception.
"""
import subprocess
import sys
import textwrap

import pytest

from tests.support.gst import require_gi

SCRIPT = textwrap.dedent('''
    import sys
    from edge_app.capture.gst.source import import_gst, probe_platform
    import_gst()
    probe_platform()
    {check}
    print("survived")
''')

CHECKS = {
    "onnxruntime corrupt model": '''
import onnxruntime
open(sys.argv[1], "wb").write(b"")
try:
    onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
except Exception as err:
    print(type(err).__name__)
''',
    "opencv error": '''
import cv2, numpy
try:
    cv2.cvtColor(numpy.zeros((5, 5), numpy.uint8), cv2.COLOR_YUV2BGR_NV12)
except cv2.error:
    print("cv2.error")
''',
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_native_exceptions_after_gstreamer_loaded(name, tmp_path):
    require_gi()
    script = SCRIPT.format(check=textwrap.indent(CHECKS[name], "").strip())
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "corrupt.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip().endswith("survived")
