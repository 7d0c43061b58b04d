"""Op classes of the ``graph`` dialect (tensor-level model graphs)."""

from ._graph_ops_gen import *  # noqa: F401,F403
from ._graph_ops_gen import _Dialect  # noqa: F401
