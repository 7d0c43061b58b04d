//===- LoopOps.td - tessel loop (schedule) dialect ---------*- tablegen -*-===//
//
// The `loop` dialect states *how* one kernel is computed, apart from *what*
// it computes (linalg on tensors). A schedule is data: a `loop.schedule` op
// next to the kernel it schedules, holding an ordered list of primitives whose
// tunable values are named `loop.knob`s with legal domains. Passes read the
// schedule and carry it out; tests, the tuner and the tuning database write
// and store it as text. See docs/architecture.md.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LOOP_OPS
#define TESSEL_LOOP_OPS

include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Dialect/SCF/IR/DeviceMappingInterface.td"
include "dialects/loop/LoopInterfaces.td"

def Loop_Dialect : Dialect {
  let name = "loop";
  let cppNamespace = "::tessel::loop";
  let summary = "Kernel schedules as IR data: tiling, mapping and tunable knobs";
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
  let useDefaultAttributePrinterParser = 1;
}

def Loop_TargetAttr : AttrDef<Loop_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "The description of a target: its limits and instructions";
  let description = [{
    Every fact about a target that a pass, the validator, the tuner or
    the runtime needs (dialects/loop/Target.h), from the table of known
    targets: `#loop.target<"sm_90">`. Names not in the table are errors;
    a new target is registered into it (tessel.targets.register) before
    IR names it.
  }];
  let parameters = (ins AttrParameter<"::tessel::loop::TargetDescription",
      "the target's facts", "const ::tessel::loop::TargetDescription &">:$description);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// The attribute of known target `name`, or null.
    static TargetAttr lookup(::mlir::MLIRContext *context, ::llvm::StringRef name);
    ::llvm::StringRef getName() const { return getDescription().name; }
  }];
}

// A target inside another attribute's struct, by name (`target = "sm_90"`).
def Loop_TargetNameParameter : AttrParameter<"::tessel::loop::TargetAttr",
                                             "a known target, by name"> {
  let parser = [{ ::tessel::loop::parseKnownTarget($_parser) }];
  let printer = [{ $_printer.printString($_self.getName()) }];
}

def Loop_MmaConfigAttr : AttrDef<Loop_Dialect, "MmaConfig"> {
  let mnemonic = "mma_config";
  let summary = "A contraction's tensor-core schedule, from loop-apply-schedule to gpu-lower-mma";
  let description = [{
    What `loop.mma`, `loop.promote` and `loop.pipeline` decided for one
    contraction, with knob values resolved: the block tile (`block_m` x
    `block_n`, the whole extent where the block level does not tile), the
    warp tile, the K step, the pipeline's stages, the padding of the
    shared-memory rows and the instruction's m and n (`shape_m` 16,
    `shape_n` 8: mma.sync, omitted; `shape_m` 64: wgmma.mma_async of
    n = `shape_n` over warpgroups of `warp_m` x `warp_n` results), the
    warpgroups that only copy (`producers`, loop.warp_specialize) and, for
    a persistent grid, its tile rows per group (`group_m`, loop.persistent;
    0: not persistent).
    loop-apply-schedule puts it on the contraction;
    it stays there through bufferization until gpu-lower-mma reads it and
    checks it against the whole tile on `target`.

    ```mlir
    linalg.matmul {tessel.mma = #loop.mma_config<target = "sm_90",
        block_m = 64, block_n = 64, warp_m = 32, warp_n = 32, k = 32,
        stages = 2, pad = 8>} ...
    ```
  }];
  let parameters = (ins Loop_TargetNameParameter:$target,
                        "int64_t":$block_m, "int64_t":$block_n,
                        "int64_t":$warp_m, "int64_t":$warp_n, "int64_t":$k,
                        "int64_t":$stages, "int64_t":$pad,
                        DefaultValuedParameter<"int64_t", "16">:$shape_m,
                        DefaultValuedParameter<"int64_t", "8">:$shape_n,
                        DefaultValuedParameter<"int64_t", "0">:$producers,
                        DefaultValuedParameter<"int64_t", "0">:$group_m);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

class Loop_Op<string mnemonic, list<Trait> traits = []>
    : Op<Loop_Dialect, mnemonic, traits>;

def Loop_ScheduleOp : Loop_Op<"schedule", [
    NoTerminator, SingleBlock, IsolatedFromAbove,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The schedule of one kernel";
  let description = [{
    Names the kernel (a function in the same module) and the target, and
    holds the primitives in the order they apply. They apply to the
    kernel's root: the linalg op computing its last result. A kernel whose
    results do not all feed that one (siblings) has further roots, each
    named by `result N` (the index of a result it computes) and scheduled
    apart. A kernel without a root (one that only concatenates its inputs)
    takes only an empty schedule, which names its target: on GPUs its ops
    then get threads as the leftovers of other schedules do. Knob names are
    unique in a
    schedule, so a point of its search space is a map from names to values.

    ```mlir
    loop.schedule @matmul_kernel target "sm_90" {
      %bm = loop.knob "block_m" = 128 choices [64, 128, 256]
      %bn = loop.knob "block_n" = 128 choices [64, 128, 256]
      %bk = loop.knob "block_k" = 32 range [16, 64] step 16
      loop.tile [%bm, %bn, 0] mapping [#gpu.block<y>, #gpu.block<x>]
      loop.tile [0, 0, %bk]
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$result,
                       Loop_TargetAttr:$target);
  let regions = (region SizedRegion<1>:$body);
  // The target prints as its name (`target "sm_90"`).
  let assemblyFormat = [{
    $kernel (`result` $result^)? `target` custom<TargetName>($target)
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    const ::tessel::loop::TargetDescription &getTargetDescription() {
      return getTarget().getDescription();
    }
  }];
}

def Loop_KnobOp : Loop_Op<"knob", [HasParent<"ScheduleOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A named tunable value with its legal domain";
  let description = [{
    The domain is either an explicit list (`choices [...]`) or an integer
    range with a step (`range [lo, hi] step s`, both ends included). The
    value must lie in the domain; the tuner rewrites only the value.

    ```mlir
    %s = loop.knob "stages" = 3 range [1, 5] step 1
    ```
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$value,
                       OptionalAttr<DenseI64ArrayAttr>:$choices,
                       OptionalAttr<I64Attr>:$lower,
                       OptionalAttr<I64Attr>:$upper,
                       OptionalAttr<I64Attr>:$step);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $name `=` $value (`choices` $choices^)?
    (`range` ` ` `[` $lower^ `,` $upper `]` `step` $step)? attr-dict
  }];
  let hasVerifier = 1;
}

def Loop_TileOp : Loop_Op<"tile", [HasParent<"ScheduleOp">,
    DeclareOpInterfaceMethods<Loop_TunableOpInterface>]> {
  let summary = "Tiles the kernel's loops, in parallel or in sequence";
  let description = [{
    One size per loop of the kernel's root op, in its iteration order; 0
    leaves a loop untiled. Sizes are constants or knobs. With `mapping`,
    the tiled loops become a parallel `scf.forall` mapped to blocks, warps or
    threads (one mapping entry per non-zero size); with `parallel` (CPU
    schedules), an `scf.forall` whose tiles run as tasks on the host's
    cores; with neither, sequential `scf.for` loops (e.g. the K loop of a
    matmul).
    ```mlir
    loop.tile [%block_m, %block_n, 0] parallel
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes,
                       DenseI64ArrayAttr:$static_sizes,
                       OptionalAttr<DeviceMappingArrayAttr>:$mapping,
                       UnitAttr:$parallel);
  let assemblyFormat = [{
    custom<DynamicIndexList>($dynamic_sizes, $static_sizes)
    (`mapping` $mapping^)? (`parallel` $parallel^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tile sizes, with knob values substituted.
    llvm::SmallVector<int64_t> getResolvedSizes();
  }];
}

// Tunable values of the primitives below are lists like loop.tile's sizes:
// constants or loop.knob results.
class Loop_ValuesOp<string mnemonic, list<Trait> traits = []>
    : Loop_Op<mnemonic, !listconcat([HasParent<"ScheduleOp">,
        DeclareOpInterfaceMethods<Loop_TunableOpInterface>], traits)> {
  let hasVerifier = 1;
}

def Loop_PromoteOp : Loop_ValuesOp<"promote"> {
  let summary = "Stages operand tiles of the contraction in shared memory";
  let description = [{
    The inputs (by position: 0 is A, 1 is B) of the kernel's contraction
    are copied tile by tile into buffers in `#gpu.address_space<workgroup>`,
    each row padded by `pad` elements so that the rows of a fragment load
    fall into different banks. `loop.mma` reads its fragments from these
    buffers (ldmatrix reads shared memory only).

    ```mlir
    loop.promote inputs [0, 1] pad [8]
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$inputs,
                       Variadic<Index>:$dynamic_pad,
                       DenseI64ArrayAttr:$static_pad);
  let assemblyFormat = [{
    `inputs` $inputs `pad` custom<DynamicIndexList>($dynamic_pad, $static_pad)
    attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedPad() {
      return resolveValues(getDynamicPad(), getStaticPad()).front();
    }
  }];
}

def Loop_MaterializeOp : Loop_ValuesOp<"materialize"> {
  let summary = "Computes contraction inputs into global memory first";
  let description = [{
    The inputs (by position: 0 is A, 1 is B) of the kernel's contraction
    that the kernel computes (the patches of a convolution) are computed
    whole, with their producers, by a loop nest of their own before the
    contraction, tiled like a pointwise kernel of the target, into buffers
    that the contraction then reads as it reads the kernel's arguments:
    `loop.mma` copies its tiles from memory with cp.async, and cannot
    compute them on the way.

    ```mlir
    loop.materialize inputs [1]
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$inputs);
  let assemblyFormat = "`inputs` $inputs attr-dict";
}

def Loop_PipelineOp : Loop_ValuesOp<"pipeline"> {
  let summary = "Multi-buffers promoted tiles and overlaps their copies";
  let description = [{
    Promoted buffers get `stages` copies; the copies of the next
    `stages - 1` K steps (cp.async, asynchronous global-to-shared copies)
    are in flight while the tensor cores work on the current one. One stage
    copies and computes in turn.

    ```mlir
    loop.pipeline stages [%stages]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_stages,
                       DenseI64ArrayAttr:$static_stages);
  let assemblyFormat = [{
    `stages` custom<DynamicIndexList>($dynamic_stages, $static_stages) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedStages() {
      return resolveValues(getDynamicStages(), getStaticStages()).front();
    }
  }];
}

def Loop_WarpSpecializeOp : Loop_ValuesOp<"warp_specialize"> {
  let summary = "Gives a tensor-core pipeline's copies warpgroups of their own";
  let description = [{
    With `producers` 1, a warpgroup of the block only copies: one of its
    threads starts each stage's TMA copies once the consumers have released
    the stage (an mbarrier per stage each way), while the other warpgroups
    only wait for full stages and compute (loop.mma of shape m64, wgmma),
    with no block-wide barrier in the K loop. 0 keeps every warpgroup a
    consumer, thread 0 starting the copies between steps.
    ```mlir
    loop.warp_specialize producers [%producers]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_producers,
                       DenseI64ArrayAttr:$static_producers);
  let assemblyFormat = [{
    `producers` custom<DynamicIndexList>($dynamic_producers, $static_producers)
    attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedProducers() {
      return resolveValues(getDynamicProducers(), getStaticProducers()).front();
    }
  }];
}

def Loop_PersistentOp : Loop_ValuesOp<"persistent"> {
  let summary = "Runs one block per SM, each walking output tiles in turn";
  let description = [{
    With a producer warpgroup (loop.warp_specialize producers [1]): the
    grid is one block per SM of the target, each taking the block tiles
    t, t + SMs, ... of the contraction in an order that keeps groups of
    `group_m` tile rows together (the tiles one wave computes then read
    fewer rows of A and columns of B, which stay in L2). The producer runs
    on into a block's next tile while its consumers store the last one's
    results: the stages' mbarriers count steps across tiles. `group_m` 0
    keeps a block per tile (so that a knob can turn the walk off).
    ```mlir
    loop.persistent group_m [%group_m]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_group_m,
                       DenseI64ArrayAttr:$static_group_m);
  let assemblyFormat = [{
    `group_m` custom<DynamicIndexList>($dynamic_group_m, $static_group_m)
    attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedGroupM() {
      return resolveValues(getDynamicGroupM(), getStaticGroupM()).front();
    }
  }];
}

def Loop_MmaOp : Loop_ValuesOp<"mma"> {
  let summary = "Computes the block tile's contraction on tensor cores";
  let description = [{
    Applies inside the block tile of the previous `loop.tile`: warps of
    `warp_m x warp_n` results each (`sizes[0]`, `sizes[1]`), a sequential K
    loop in steps of `sizes[2]`, and `nvgpu.mma.sync` instructions of
    `shape` (m16n8k16 for f16 or bf16 operands, m16n8k8 for f32 operands
    multiplied as tf32; f32 accumulation) fed from the promoted tiles.
    A shape of m 64 (`[64, n, 16]`, f16 or bf16 on sm_90a) selects
    `wgmma.mma_async` of that n instead: warpgroups (four warps) of
    `warp_m x warp_n` results, both operands read from 128-byte-swizzled
    shared tiles through matrix descriptors (`sizes[2]` is then 64: one
    swizzled 128-byte row of K). Elementwise epilogues fused into the
    block tile run on the accumulator registers, so the f32 tile never
    goes to memory.

    ```mlir
    loop.mma [%warp_m, %warp_n, %block_k] shape [16, 8, 16]
    loop.mma [64, 128, 64] shape [64, 128, 16]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes,
                       DenseI64ArrayAttr:$static_sizes,
                       DenseI64ArrayAttr:$shape);
  let assemblyFormat = [{
    custom<DynamicIndexList>($dynamic_sizes, $static_sizes) `shape` $shape
    attr-dict
  }];
  let extraClassDeclaration = [{
    llvm::SmallVector<int64_t> getResolvedSizes() {
      return resolveValues(getDynamicSizes(), getStaticSizes());
    }
  }];
}

def Loop_WarpReduceOp : Loop_ValuesOp<"warp_reduce"> {
  let summary = "Shares each row of the block tile among the block's threads";
  let description = [{
    For kernels that reduce rows (softmax, layer_norm): after a block-level
    `loop.tile` that leaves the innermost loop whole, the block's `threads`
    threads split every op's innermost loop between them (thread t takes
    columns t, t + threads, ...). A reduction over that loop combines the
    threads' partial results with warp shuffles and, across warps, through
    shared memory; every thread then holds the row's result in a register.
    Elementwise intermediates are recomputed where they are read instead of
    stored, so a row is read from memory once per pass over it.

    ```mlir
    loop.tile [1, 0] mapping [#gpu.block<x>]
    loop.warp_reduce threads [256]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_threads,
                       DenseI64ArrayAttr:$static_threads);
  let assemblyFormat = [{
    `threads` custom<DynamicIndexList>($dynamic_threads, $static_threads) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedThreads() {
      return resolveValues(getDynamicThreads(), getStaticThreads()).front();
    }
  }];
}

def Loop_GridReduceOp : Loop_ValuesOp<"grid_reduce", [AttrSizedOperandSegments]> {
  let summary = "Reduces to a single value in parts computed in parallel";
  let description = [{
    For kernels that reduce a tensor to a single value (a sum, a mean, the
    maximum of a 1-D softmax): each such reduction is cut into `parts`
    rows of equal length (its loops merged into one, then split), whose
    partial results are computed in parallel, then combined. A part count
    must divide the number of elements reduced.

    On GPUs, one block computes each row, its `threads` threads sharing
    the row as in `loop.warp_reduce`; one block then combines the rows'
    partial results and computes the single-value ops that follow. The
    kernel's other ops (those over tensors, which read the value) are tiled
    like elementwise kernels. One part reduces the whole tensor in one
    block. The primitive covers the whole kernel: its schedule has no
    `loop.tile` and is the kernel's only schedule.

    On the CPU, which takes no `threads`, each row is a parallel task,
    walked in vectors of partial results when the schedule also has
    `loop.split_reduction` (rows shorter than its lanes are not split). The
    combination and the single-value ops after it are computed once, before
    the tiles of the kernel's other ops, which the schedule's `loop.tile`
    tiles as in other kernels.
    ```mlir
    %parts = loop.knob "parts" = 256 choices [1, 2, 4, 8, 16, 32, 64, 128, 256]
    %threads = loop.knob "threads" = 256 choices [32, 64, 128, 256, 512, 1024]
    loop.grid_reduce parts [%parts] threads [%threads]
    // CPU:
    loop.grid_reduce parts [%parts]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_parts,
                       DenseI64ArrayAttr:$static_parts,
                       Variadic<Index>:$dynamic_threads,
                       DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{}">:$static_threads);
  let assemblyFormat = [{
    `parts` custom<DynamicIndexList>($dynamic_parts, $static_parts)
    (`threads` custom<DynamicIndexList>($dynamic_threads, $static_threads)^)?
    attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedParts() {
      return resolveValues(getDynamicParts(), getStaticParts()).front();
    }
    /// The thread count, absent on the CPU.
    std::optional<int64_t> getResolvedThreads() {
      if (getStaticThreads().empty())
        return std::nullopt;
      return resolveValues(getDynamicThreads(), getStaticThreads()).front();
    }
  }];
}

def Loop_VectorizeOp : Loop_ValuesOp<"vectorize", [AttrSizedOperandSegments]> {
  let summary = "Computes the tile's matmul in vector registers (CPU)";
  let description = [{
    For CPU schedules of (batched) matmul kernels, after a
    `loop.tile ... parallel` (or alone, for the whole matmul): the tile's
    matmul, one batch index at a time, walks K in equal cache blocks of at
    most `depth`, and each K step in blocks of at most `rows` of the tile's
    rows (whole register blocks that divide them), whose A rows stay in
    cache while every column strip of the step's B block passes them; the
    B block is first copied into a buffer that they all read (when there
    are several). Each row block is walked in register blocks of `sizes` =
    (rows, columns, depth), each one `vector.contract` lowered to outer
    products, whose accumulator stays in registers across the depth loop.
    A tile that the sizes do not divide is padded with zeros, and of a
    tiling that does not divide the matmul, only the partial edge tiles
    are; the columns that whole register blocks leave over, where at most
    half a block, take blocks of the next power of two instead (a
    single column, dot products along K); a size larger than the tile is
    rejected.
    ```mlir
    loop.vectorize [%reg_m, %reg_n, %reg_k] depth [%block_k] rows [%cache_m]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes,
                       DenseI64ArrayAttr:$static_sizes,
                       Variadic<Index>:$dynamic_depth,
                       DenseI64ArrayAttr:$static_depth,
                       Variadic<Index>:$dynamic_rows,
                       DenseI64ArrayAttr:$static_rows);
  let assemblyFormat = [{
    custom<DynamicIndexList>($dynamic_sizes, $static_sizes)
    `depth` custom<DynamicIndexList>($dynamic_depth, $static_depth)
    `rows` custom<DynamicIndexList>($dynamic_rows, $static_rows) attr-dict
  }];
  let extraClassDeclaration = [{
    llvm::SmallVector<int64_t> getResolvedSizes() {
      return resolveValues(getDynamicSizes(), getStaticSizes());
    }
    int64_t getResolvedDepth() {
      return resolveValues(getDynamicDepth(), getStaticDepth()).front();
    }
    int64_t getResolvedRows() {
      return resolveValues(getDynamicRows(), getStaticRows()).front();
    }
  }];
}

def Loop_SplitReductionOp : Loop_ValuesOp<"split_reduction"> {
  let summary = "Keeps vectors of partial results in the tile's reductions (CPU)";
  let description = [{
    Every reduction in the tile over its innermost loop (the max and the sum
    of a softmax, the moments of a layer_norm) walks that loop in steps of
    `lanes`, keeping `lanes` partial results in vector registers, and
    combines them once at the end. The adds of one step then do not wait on
    each other, as they do in a scalar reduction; floating-point reductions
    are reassociated. When `lanes` does not divide the reduced extent, the
    remainder is reduced after the vectors; `lanes` larger than the extent
    is rejected, and 1 leaves the reductions as they are.
    ```mlir
    loop.split_reduction lanes [%lanes]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_lanes,
                       DenseI64ArrayAttr:$static_lanes);
  let assemblyFormat = [{
    `lanes` custom<DynamicIndexList>($dynamic_lanes, $static_lanes) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedLanes() {
      return resolveValues(getDynamicLanes(), getStaticLanes()).front();
    }
  }];
}

def Loop_SplitKOp : Loop_ValuesOp<"split_k"> {
  let summary = "Splits the contraction's K loop into parts computed in parallel";
  let description = [{
    For matmul kernels (maybe batched, maybe under an elementwise
    epilogue) whose M x N tiles are too few to occupy the machine: the
    contraction's K loop is cut into `parts` equal parts (a part count must
    divide K), each computing an f32 partial product in parallel (an extra
    parallel loop, one part per tile of the first parallel or block-level
    `loop.tile`; grid z on GPUs) into a workspace of `parts x M x N`. A
    second loop nest then sums the parts into the result and runs the
    epilogue, tiled like an elementwise kernel of the target. The
    schedule's `loop.tile` sizes stay those of the kernel's root loops; its
    other primitives (`loop.vectorize`, `loop.mma`) apply to the partial
    products, with K the part's length. One part leaves the kernel as it
    is.
    ```mlir
    loop.split_k parts [%parts]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_parts,
                       DenseI64ArrayAttr:$static_parts);
  let assemblyFormat = [{
    `parts` custom<DynamicIndexList>($dynamic_parts, $static_parts) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedParts() {
      return resolveValues(getDynamicParts(), getStaticParts()).front();
    }
  }];
}

def Loop_UnrollOp : Loop_ValuesOp<"unroll"> {
  let summary = "Unrolls the innermost loop of each op in the tile";
  let description = [{
    The linalg ops of the innermost tile (those no other primitive
    rewrites) become loops after bufferization, and the innermost loop of
    each is unrolled by `factor` (a remainder loop follows when the factor
    does not divide it): a thread's K loop in a GPU fallback contraction, a
    tile's window loop in a convolution. 1 leaves the loops as they are.
    ```mlir
    loop.unroll factor [%unroll]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_factor,
                       DenseI64ArrayAttr:$static_factor);
  let assemblyFormat = [{
    `factor` custom<DynamicIndexList>($dynamic_factor, $static_factor) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedFactor() {
      return resolveValues(getDynamicFactor(), getStaticFactor()).front();
    }
  }];
}

def Loop_VectorAccessOp : Loop_ValuesOp<"vector_access"> {
  let summary = "Moves each thread's points as vectors (GPU)";
  let description = [{
    For elementwise roots whose thread tile is `width` adjacent points of
    the innermost loop, and of at most one other loop (one point of every
    other): each thread loads and stores its points as vectors of `width`
    elements (16 bytes at most) along the tile loop of each operand's
    innermost index, wherever the buffer's layout and the tile's offsets
    make the vector aligned; a broadcast operand is read once, others per
    point, and a partial edge tile runs point by point. A square tile is
    for a transposed operand: its vectors run along the other loop, the
    result's along the innermost. The thread tile names the same knob:
    ```mlir
    %vector = loop.knob "vector" = 4 choices [1, 2, 4]
    loop.tile [1, 1024] mapping [#gpu.block<y>, #gpu.block<x>]
    loop.tile [0, %vector] mapping [#gpu.thread<x>]
    loop.vector_access width [%vector]
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_width,
                       DenseI64ArrayAttr:$static_width);
  let assemblyFormat = [{
    `width` custom<DynamicIndexList>($dynamic_width, $static_width) attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getResolvedWidth() {
      return resolveValues(getDynamicWidth(), getStaticWidth()).front();
    }
  }];
}

def Loop_TensorMapOp : Loop_Op<"tensor_map", [Pure]> {
  let summary = "A TMA tensor map of a buffer, encoded by the runtime";
  let description = [{
    The 128-byte tensor map (`CUtensorMap`) that copies tiles of `box`
    elements (outermost dim first, like the buffer's shape) out of
    `source`, a whole row-major buffer of the host program, into shared
    memory with `swizzle` ("none", "32B", "64B" or "128B"), elements
    outside the buffer read as zeros. gpu-lower-mma makes one per operand
    it copies with TMA (`cp.async.bulk.tensor`); the CUDA backend records
    it in the artifact's manifest, and the runtime encodes it with
    `cuTensorMapEncodeTiled` for the address the buffer has in each call
    and passes the kernel its address in device memory.

    ```mlir
    %map = loop.tensor_map %a box [128, 64] swizzle "128B"
        : memref<4096x4096xf16> -> memref<128xi8>
    ```
  }];
  let arguments = (ins AnyMemRef:$source, DenseI64ArrayAttr:$box,
                       StrAttr:$swizzle);
  let results = (outs MemRefOf<[I8]>:$map);
  let assemblyFormat = [{
    $source `box` $box `swizzle` $swizzle attr-dict `:` type($source) `->`
    type($map)
  }];
  let hasVerifier = 1;
}

#endif // TESSEL_LOOP_OPS
