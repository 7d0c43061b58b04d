//===- LoopInterfaces.td - interfaces of the loop dialect --*- tablegen -*-===//
//
// What a schedule primitive's tunable values mean, exported once from the
// ops so that passes, the knob table (passes/loop/KnobTable.h) and the
// tuner's features read it instead of re-deriving it from printed IR.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LOOP_INTERFACES
#define TESSEL_LOOP_INTERFACES

include "mlir/IR/OpBase.td"

def Loop_TunableOpInterface : OpInterface<"TunableOpInterface"> {
  let cppNamespace = "::tessel::loop";
  let description = [{
    A schedule primitive whose values are lists of constants and
    `loop.knob` results (tile sizes, a stage count, ...). Each list says
    what its entries cut: the root's loops in order (`loop.tile`), the
    contraction's reduction (a K block), the root's innermost loop (the
    threads or lanes that share it), or nothing of the kernel itself (a
    size within a tile, a count).
  }];
  let methods = [
    InterfaceMethod<
      "The primitive's lists of tunable values, in printed order.",
      "::llvm::SmallVector<::tessel::loop::TunableList>", "getTunableLists">
  ];
}

#endif // TESSEL_LOOP_INTERFACES
