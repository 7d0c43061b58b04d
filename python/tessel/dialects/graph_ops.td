#ifndef TESSEL_PYTHON_GRAPH_OPS
#define TESSEL_PYTHON_GRAPH_OPS
include "dialects/graph/GraphOps.td"
#endif
