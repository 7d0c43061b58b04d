//===- Calls.h - calls of a function whose results changed ------*- C++ -*-===//
//
// Shared by host-dedupe-kernel-results and host-drop-destination-results,
// which change a function's results and then redo each call of it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_HOST_CALLS_H
#define TESSEL_PASSES_HOST_CALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace tessel {

/// Replaces each call of `callee` in `module`, whose results just changed,
/// by a call of it with the same operands, each old result's uses going to
/// `replacement(b, old, now, i)` (`b` before the old call). An error,
/// `unknownUse` at `callee` or `notCall` at the user, where a use of its
/// symbol is not a call.
inline mlir::LogicalResult recreateCalls(
    mlir::func::FuncOp callee, mlir::ModuleOp module, llvm::StringRef unknownUse,
    llvm::StringRef notCall,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::func::CallOp,
                                   mlir::func::CallOp, unsigned)>
        replacement) {
  std::optional<mlir::SymbolTable::UseRange> uses =
      mlir::SymbolTable::getSymbolUses(callee, module);
  if (!uses)
    return callee.emitError(unknownUse);
  for (mlir::SymbolTable::SymbolUse use : *uses) {
    auto call = llvm::dyn_cast<mlir::func::CallOp>(use.getUser());
    if (!call)
      return use.getUser()->emitError(notCall);
    mlir::OpBuilder b(call);
    auto now = mlir::func::CallOp::create(b, call.getLoc(), callee,
                                          call.getOperands());
    for (auto [i, result] : llvm::enumerate(call.getResults()))
      result.replaceAllUsesWith(replacement(b, call, now, i));
    call.erase();
  }
  return mlir::success();
}

} // namespace tessel

#endif // TESSEL_PASSES_HOST_CALLS_H
