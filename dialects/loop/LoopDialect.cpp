//===- LoopDialect.cpp - tessel loop dialect ------------------------------===//

#include "dialects/loop/Loop.h"

using namespace mlir;
using namespace tessel::loop;

#include "dialects/loop/LoopDialect.cpp.inc"

void LoopDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/loop/LoopOps.cpp.inc"
      >();
}
