//===- LoopDialect.cpp - tessel loop dialect ------------------------------===//

#include "dialects/loop/Loop.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tessel::loop;

#include "dialects/loop/LoopDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/loop/LoopAttrs.cpp.inc"

void LoopDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/loop/LoopAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/loop/LoopOps.cpp.inc"
      >();
}
