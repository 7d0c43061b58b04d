"""Op classes of the ``loop`` dialect (kernel schedules)."""

from ._loop_ops_gen import *  # noqa: F401,F403
from ._loop_ops_gen import _Dialect  # noqa: F401
