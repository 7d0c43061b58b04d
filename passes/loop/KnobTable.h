//===- KnobTable.h - the knobs of a scheduled module, as data -*- C++ -*-===//
//
// What Python's schedules, tuner and cost model need of a module's
// schedules, read from the ops (loop.knob and TunableOpInterface) rather
// than from printed IR: every knob with its value and domain, and every
// primitive's tunable lists with, for each entry, the knob it names and the
// extent of the kernel loop it cuts.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOOP_KNOBTABLE_H
#define TESSEL_PASSES_LOOP_KNOBTABLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace tessel {

/// One object per loop.schedule of `module`, in order:
///   {"kernel", "result" (null for the first root), "target",
///    "knobs": [{"name", "value", "choices": [...]} or
///              {"name", "value", "lower", "upper", "step"}],
///    "primitives": [{"op", "parallel" (loop.tile only),
///                    "lists": [{"name" ("" for the unnamed one),
///                               "entries": [{"knob" (absent for a
///                                 constant), "value", "extent" (the loop
///                                 it cuts, null when none or dynamic)}]}]}]}
/// A schedule whose kernel or root is missing gets null extents; the
/// validator reports those.
llvm::json::Array knobTable(mlir::ModuleOp module);

} // namespace tessel

#endif // TESSEL_PASSES_LOOP_KNOBTABLE_H
