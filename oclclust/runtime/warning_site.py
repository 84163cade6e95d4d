"""Where oclclust's warnings point: at the user's line that called into the
package, whatever depth inside it a warning is raised at (a fixed
``stacklevel`` names a line of ours as soon as a call is added between the
two, such as an estimator's fit recording its kernels).  pandas'
``find_stack_level`` does the same."""
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel():
    """The ``stacklevel`` for warnings.warn, as an argument of that call,
    that names the first frame outside the oclclust package."""
    frame, level = sys._getframe(1), 1   # the function that calls warnings.warn
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
