//===- Loop.h - tessel loop (schedule) dialect ------------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_LOOP_LOOP_H
#define TESSEL_DIALECTS_LOOP_LOOP_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/DeviceMappingInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OpAsmSupport.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/loop/LoopDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/loop/LoopOps.h.inc"

#endif // TESSEL_DIALECTS_LOOP_LOOP_H
