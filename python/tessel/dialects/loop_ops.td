#ifndef TESSEL_PYTHON_LOOP_OPS
#define TESSEL_PYTHON_LOOP_OPS
include "dialects/loop/LoopOps.td"
#endif
