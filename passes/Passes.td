//===- Passes.td - tessel pass declarations ----------------*- tablegen -*-===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Graph passes, in pipeline order
//===----------------------------------------------------------------------===//

def GraphDecompose : Pass<"graph-decompose"> {
  let summary = "Rewrite composite graph ops into primitive ones";
  let description = [{
    softmax and log_softmax become max/sum reductions around exp; layer_norm
    and rms_norm become mean reductions and elementwise ops (computed in f32
    for f16/bf16); batch_norm becomes `x * s + t` with per-channel `s` and
    `t`; linear becomes matmul with a transposed weight plus bias. After
    this pass, constant folding precomputes everything that depends on
    weights only and fusion sees the primitive ops. Zero-size tensors fold
    away: an op with an empty result becomes an empty constant, a sum,
    mean, max, min, matmul or conv over nothing its identity (plus a
    conv's bias), and a concatenation drops its empty operands.
  }];
}

def GraphFormFusionGroups : Pass<"graph-form-fusion-groups", "mlir::func::FuncOp"> {
  let summary = "Group graph ops into graph.fused regions, one per kernel";
  let description = [{
    Every compute op joins exactly one group, by the rules documented in
    FormFusionGroups.cpp and docs/architecture.md: elementwise chains (R1),
    reductions with their elementwise producers, so softmax and layer_norm
    are one group (R2), and epilogues (bias, activation, residual add,
    cast) of matmul/conv and of reductions (R3). Nothing is duplicated.
    With `report`, a remark at each group's first op lists its ops and the
    rule that brought each in.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark per group: its kind, ops and why each joined">,
  ];
  let dependentDialects = ["tessel::graph::GraphDialect"];
}

def GraphOutlineKernels : Pass<"graph-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Turn each graph.fused group into a private kernel function";
  let description = [{
    Group N of function @f becomes `func.func private @f_kernelN`, marked
    `tessel.kernel = #graph<fusion_kind>`, called from @f. @f is left as the
    host program: constants and kernel calls in dependency order, which
    bufferization turns into buffer allocation, reuse and deallocation.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

def ConvertGraphToLinalg : Pass<"graph-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower graph ops to upstream linalg on tensors";
  let description = [{
    Rewrites every graph op into upstream MLIR only: constants become
    `arith.constant`, elementwise ops become `linalg.generic` with
    broadcasting indexing maps, 2-D matmuls become `linalg.matmul` and
    batched ones a `linalg.generic` contraction. f16/bf16 matmuls accumulate
    in f32 and round once at the end. `graph.fused` groups are inlined: use
    this pass to export a graph for other MLIR compilers, or after kernels
    have been outlined.

    A `?` dim must be a size symbol (#graph.shape, docs/dynamic-shapes.md):
    the types lose their encodings, and each dynamic size is computed
    (`tensor.dim` of the function argument that has it, `affine.apply` of
    its expression); a `?` without one is reported at the op that has it.

    With `destinations` (the compile pipelines), a function with a dynamic
    result takes a destination tensor per result, sized by its callers
    (destination-passing style): kernels' results are sized by the host
    program, the entry function's by the runtime that calls it.
  }];
  let options = [
    Option<"destinations", "destinations", "bool", /*default=*/"false",
           "Functions with dynamically shaped results take destinations">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::tensor::TensorDialect",
  ];
}

def MemrefExpandShapesAsCasts : Pass<"memref-expand-shapes-as-casts"> {
  let summary = "memref.expand_shape of several dynamic sizes per group as a reinterpret_cast";
  let description = [{
    Upstream's expand-strided-metadata lowers a memref.expand_shape only
    when each reassociation group has at most one dynamic size. Over size
    symbols a group can have more ([batch * seq] into [batch, seq]): such an
    expand_shape becomes a memref.reinterpret_cast of its source's base and
    offset, the output sizes, and strides computed from them. Run before
    expand-strided-metadata.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// Host program
//===----------------------------------------------------------------------===//

def HostDedupeKernelResults : Pass<"host-dedupe-kernel-results", "mlir::ModuleOp"> {
  let summary = "Give each kernel one result per distinct returned value";
  let description = [{
    A `tessel.kernel` function that returns the same value more than once
    (after canonicalization, e.g. `select(c, x, x)` became `x`) returns it
    once; its calls are rewritten and their duplicate results forwarded.
    Run before bufferization: aliased results cannot become out-params.
  }];
}

def HostDropDestinationResults : Pass<"host-drop-destination-results", "mlir::ModuleOp"> {
  let summary = "Results of functions in destination-passing style left in their destinations";
  let description = [{
    After bufferization, a function that graph-to-linalg{destinations} put
    in destination-passing style (`tessel.destinations`) returns its
    destination buffers: its results are dropped and each call uses the
    destinations it passed. The public entry function's results are
    dropped too: the runtime allocates them at the sizes of the call.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def HostReuseBuffers : Pass<"host-reuse-buffers", "mlir::func::FuncOp"> {
  let summary = "Write results in place and reuse freed intermediate buffers";
  let description = [{
    Runs on bufferized functions. The alloc whose contents are finally
    copied into an output argument, directly or through a reshape, is
    replaced by that argument (or its inverse reshape). In host functions
    (not `tessel.kernel` ones), an alloc whose type matches a buffer
    deallocated earlier in the block takes that buffer instead of new
    memory. Run `optimize-allocation-liveness` first so that deallocs follow
    last uses.
  }];
}

//===----------------------------------------------------------------------===//
// CPU code generation
//===----------------------------------------------------------------------===//

def CpuFuseElementwise : Pass<"cpu-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg producers into their consumers";
  let description = [{
    Upstream's elementwise fusion (a producer with a single use is inlined
    into its consumer's linalg.generic) without the reshape propagation of
    `linalg-fuse-elementwise-ops`, which would turn a batched x @ W's 2-D
    linalg.matmul back into a generic. A linalg.transpose whose only user
    is a linalg.generic is generalized first, so that it fuses as well.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CpuGatherRows : Pass<"cpu-gather-rows"> {
  let summary = "Read a gather's index once per row of its innermost loop";
  let description = [{
    A parallel linalg.generic on tensors whose body reads a tensor
    (tensor.extract) at an index taken from an input that is the same along
    the innermost loop (an embedding lookup, `table[ids]`), and whose
    innermost loop has 16 or more points, is tiled to one point of every
    other loop (scf.for), its unit dims dropped, and those inputs read once
    before the row (tensor.extract of the rank-0 slice). Lowered to loops,
    the index would otherwise be loaded at every point of the row, a load
    LLVM cannot hoist, as the output might alias it; with it read once, the
    row is a copy that LLVM vectorizes (an embedding of 32x128 ids into a
    30000x768 table: 1.33 -> 0.54 ms on the 2-core Sapphire Rapids VM,
    torch 0.47). Runs after loop-apply-schedule, on the tiles.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
}

def CpuVectorizeConvolutions : Pass<"cpu-vectorize-convolutions"> {
  let summary = "Compute convolution and max pooling tiles a vector of an "
                "output row at a time";
  let description = [{
    A linalg op on f32 tensors of static shape that computes
    `out += in * filter`, or a max pooling's `out = max(out, in)` (each tap
    a max of the run, the window never read), over a convolution's loops
    (upstream's
    inferConvolutionDims: two output image loops, the columns the output's
    last dim, read by the input's last dim at a fixed stride), as the
    grouped and depthwise convolutions that linalg-im2col leaves are after
    tiling, becomes loops over its other parallel and reduction loops
    around vectors of up to 32 output columns (16 at a stride): each read
    once, each of its taps (unrolled, at most 64) an FMA of the input row's
    run (a contiguous vector read, or its span shuffled at a stride) with
    the tap's weight broadcast, then written once. Lowered to loops instead,
    every output point is a scalar chain of FMAs over the taps (a 3x3
    depthwise convolution of 32x112x112: 0.37 ms, torch 0.23). A tile of a
    padded image (a slice of a tensor.pad at static bounds) reads the image
    itself: rows out of bounds are selected away, columns shuffled in, and
    the padded copy, made whole in one thread before the tiles, is never
    made. The tile's elementwise consumer (bias, activation, residual) is
    computed on each vector as it leaves the registers, and the
    accumulators start from their fill's value: no accumulator buffer.
    Runs after loop-apply-schedule, on the tiles.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::vector::VectorDialect"];
}

def CpuSerializeInnerForalls : Pass<"cpu-serialize-inner-foralls"> {
  let summary = "Turn scf.forall loops nested in another forall into scf.for";
  let description = [{
    On the CPU only the outermost forall of a nest runs in parallel (its
    iterations become async-runtime tasks); nested foralls, such as the
    thread level of a GPU schedule checked on the CPU, run sequentially.
    Works on tensors or buffers.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect"];
}

def CpuDropRedundantWrites : Pass<"cpu-drop-redundant-writes", "mlir::func::FuncOp"> {
  let summary = "Drop writes that a later copy overwrites or that copy a buffer onto itself";
  let description = [{
    Runs on buffers. A fill of a static buffer (linalg.fill, or a linalg.map
    without inputs yielding a value from outside its body), or of a view of
    one, from memref.alloc or an argument of a `tessel.kernel` function
    (the host passes a kernel distinct buffers: a batched matmul's result
    zeroed before each head's padded tile was copied over it), that a
    memref.copy in the same block then overwrites, before anything else
    reads the buffer, either goes (the copy's target is the buffer) or
    fills only the border around the copy's target (a subview of static
    offsets and sizes and unit strides: a bufferized tensor.pad, whose fill
    of the whole buffer wrote its interior twice, on one thread); not where
    the copy reads the buffer itself. A memref.copy from a buffer to itself
    (directly, or through a collapse_shape and the expand_shape back) goes.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect"];
}

def CpuExpandStridedCopies : Pass<"cpu-expand-strided-copies"> {
  let summary = "Turn memref.copy between non-contiguous buffers into linalg.copy";
  let description = [{
    LLVM lowering copies contiguous buffers with memcpy, and any other pair
    through the runtime's generic copy, one memcpy call per element. This
    pass rewrites those copies as linalg.copy, whose loops (after
    convert-linalg-to-loops) LLVM vectorizes. A copy of 256 KiB or more at
    the top of a `tessel.kernel` function (a concatenation's parts placed
    into the result, or a padded input's interior, which no schedule tiles)
    is cut into chunks of about 64 KiB of its outermost dim of more than one
    index under an scf.parallel, for async-parallel-for to run as tasks
    (one thread copying the padded 64x56x56 input of a ResNet 3x3
    convolution, 800 KiB, while the others waited, cost it 13%).
    Runs on buffers, after scf-forall-to-parallel.
  }];
  let options = [
    Option<"parallelBytes", "parallel-bytes", "int64_t", "262144",
           "Smallest kernel-level copy, in bytes, copied in parallel "
           "chunks (0: none)">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def CpuVectorizeCopies : Pass<"cpu-vectorize-copies", "mlir::func::FuncOp"> {
  let summary = "Move rows of copies and transposes as whole vectors";
  let description = [{
    Runs on buffers, before convert-linalg-to-loops. A linalg.copy, or a
    linalg.transpose that keeps the innermost dim innermost, whose innermost
    dim is static, a power of two elements of 16 bytes to `max-bytes`, and
    contiguous on both sides
    becomes a loop nest over the other dims (in the output's order) that
    moves each row with one vector.load and one vector.store. Left to LLVM,
    the row loop is vectorized behind a run-time overlap check of the two
    buffers with a scalar copy as the fallback, whose many address streams
    loop strength reduction spends long on when the strides are sizes (the
    transpose merging attention's heads over a symbolic sequence: 0.31 s
    of code generation that way, 0.05 s as vectors in loops that LLVM is
    told not to unroll).
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", "1024",
           "Longest row, in bytes, moved as one vector">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def CpuApproximateMath : Pass<"cpu-approximate-math"> {
  let summary = "Replace transcendental math ops by inline polynomials";
  let description = [{
    Applies upstream's math polynomial approximations (exp, expm1, log,
    log1p, log2, tanh, erf, atan, ... in f32, a few ulp) so that loops using
    them vectorize instead of calling libm per element. Not sin and cos:
    their f32 range reduction loses all precision for large arguments, so
    they stay libm calls.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::math::MathDialect",
    "mlir::vector::VectorDialect",
  ];
}

def CpuFlattenConstants : Pass<"cpu-flatten-constants", "mlir::ModuleOp"> {
  let summary = "Make constant globals arrays of bytes, read through views";
  let description = [{
    Each constant memref.global with a dense initial value of whole-byte
    elements, a static shape, an identity layout and the default memory
    space becomes a 1-D i8 global of its bytes (a splat written out), and
    each memref.get_global of it a get_global of the bytes followed by a
    memref.view with the old type (the same bytes, in the same order, at the
    global's alignment). LLVM IR spells an N-D global as nested arrays, one
    constant per innermost row (a 512x512x3x3 weight: 786,432 arrays of
    three floats), and emits a float array element by element, while an
    array of bytes is one blob: ResNet-18's weights took 28 s of its 31 s
    compile as nested arrays.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def CpuCollapseReductions
    : Pass<"cpu-collapse-reductions", "mlir::func::FuncOp"> {
  let summary = "Merge a reduction's trailing reduced axes into one loop";
  let description = [{
    A linalg.generic whose trailing loops are two or more reductions (a sum
    of a whole tensor, a mean over H and W), along which every operand is
    contiguous and which read only function arguments or constants, has
    those loops merged into one (upstream `collapseOpIterationDims`; the
    inputs are read through tensor.collapse_shape). CPU schedules split a
    single innermost reduction into vectors of partial results; several
    reduction loops left a chain of dependent scalar adds per result.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CpuInterchangeReductions
    : Pass<"cpu-interchange-reductions", "mlir::func::FuncOp"> {
  let summary = "Reduce across rows with the loop along the rows innermost";
  let description = [{
    A linalg.generic whose innermost loop is a reduction that walks an input
    across its rows (a sum over axis 0) has the parallel loop along which
    that input is contiguous moved innermost (upstream
    `interchangeGenericOp`), so that each step updates a row of results from
    a row of the input: whole cache lines, vectorized by LLVM, and results
    that stay in L1, instead of an element per line. Each result is reduced
    in the same order. Runs before linalg becomes loops.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CpuPreferVectorWidth : Pass<"cpu-prefer-vector-width", "mlir::ModuleOp"> {
  let summary = "Ask LLVM to vectorize loops at the CPU's full vector width";
  let description = [{
    Sets `prefer_vector_width` on every LLVM function of the module that has
    none. LLVM's loop vectorizer prefers 256-bit vectors on AVX-512 chips
    (Skylake-X to Sapphire Rapids), a guard against the clock drop of heavy
    512-bit code; tessel's schedules already use 512-bit vectors there, and
    the loops it leaves to LLVM (elementwise passes, the exp of a softmax)
    ran up to 15% slower at half width. `bits` = 0 leaves the functions
    as they are.
  }];
  let options = [
    Option<"bits", "bits", "unsigned", "0",
           "Preferred vector width in bits (0: LLVM's default for the CPU)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def CpuStreamingStores : Pass<"cpu-streaming-stores", "mlir::func::FuncOp"> {
  let summary = "Write large kernel results with non-temporal vector stores";
  let description = [{
    Runs on `tessel.kernel` functions on buffers, before linalg becomes
    loops. An elementwise linalg.generic that writes at least `min-bytes`
    of a function argument (a kernel result), whose innermost extent is a
    multiple of the vector lanes and whose tile offsets keep vectors
    aligned, is tiled by one vector along its innermost loop, vectorized,
    and its vectors stored non-temporally (`vector.store {nontemporal}`,
    aligned to the vector's size) followed by a fence; the op stays as it
    was on a branch taken when the argument's buffer is not so aligned.
    Non-temporal stores skip the read of each line a store would do first
    and leave the caches alone. For results that do not fit the caches
    that is faster (a 2^24-element x*2, and a write read back by a second
    loop, on the 2-core Sapphire Rapids VM: 1.2-1.5x at 32-64 MiB), and
    slower for those that do (0.3-0.8x at 1-8 MiB, read back from cache
    otherwise). `vector-bits` = 0 leaves the function as it is.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "0",
           "Bits of the CPU's vectors (0: no streaming stores)">,
    Option<"minBytes", "min-bytes", "int64_t", "33554432",
           "Smallest kernel result, in bytes, written with streaming stores">,
  ];
  let dependentDialects = [
    "mlir::LLVM::LLVMDialect",
    "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Schedules (loop dialect) and GPU code generation
//===----------------------------------------------------------------------===//

def LinalgIm2Col : Pass<"linalg-im2col", "mlir::func::FuncOp"> {
  let summary = "Rewrite convolutions as im2col plus a (batched) matmul";
  let description = [{
    Runs on `tessel.kernel` functions on linalg tensors, after elementwise
    fusion (which would fold the patches into every step of the matmul).
    Each linalg.conv_2d_nchw_fchw and linalg.conv_2d_nhwc_hwcf of static
    shape becomes a generic that gathers the input's patches ([N, OH*OW,
    KH*KW*C] or [N, C*KH*KW, OH*OW], any strides and dilations) feeding a
    batched matmul with the filter, reshaped back. Schedules then treat a
    convolution as the matmul it is: tiling fuses the gather into each
    tile, so patches are never materialized whole, and the CPU vectorizes
    it as any matmul. Grouped convolutions (generics) are left as they are.
    With `fold-padding`, a convolution of a constant spatial tensor.pad
    gathers from the unpadded tensor, testing bounds (GPUs: no padded copy).
  }];
  let options = [
    Option<"foldPadding", "fold-padding", "bool", /*default=*/"false",
           "Read a constant spatial padding through bounds tests instead of "
           "a padded copy">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect",
  ];
}

def LinalgSinkReshapes : Pass<"linalg-sink-reshapes", "mlir::func::FuncOp"> {
  let summary = "Move reshapes of kernel-computed values out to the kernel's results";
  let description = [{
    Runs on `tessel.kernel` functions on linalg tensors. A linalg.generic
    that consumes a tensor.expand_shape of a value computed in the kernel
    (the epilogue of a batched x @ W) is collapsed to the unexpanded shape,
    so the expand_shape moves to its result and the contraction and its
    epilogue form one nest that tiling fuses.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def LoopDefaultSchedule : Pass<"loop-default-schedule", "mlir::ModuleOp"> {
  let summary = "Give every kernel without a schedule the target's default one";
  let description = [{
    Runs after graph-to-linalg. Each root of a `tessel.kernel` function that
    no `loop.schedule` names gets one for `target`, with its tunable values
    as knobs whose domains hold the legal values.
    GPU targets: tensor cores (loop.mma) for f16 and bf16 matmuls (and f32
    ones, as tf32, with allow-tf32), rows shared by a block's threads
    (loop.warp_reduce) for softmax/norm-like kernels, reductions to a
    single value in parts across the grid (loop.grid_reduce, one schedule
    for the whole kernel), else
    the root's parallel loops over blocks and then threads (one thread per
    point; in kernels built around a reduction the innermost loop of an
    elementwise root stays whole, so reductions are never recomputed). A
    kernel with nothing to distribute (an f16 sum to a scalar)
    gets no schedule (gpu-map-kernels runs it in one thread).
    CPU: parallel tiles (tasks of the async runtime) of about 16K points
    of the root's iteration space, inner loops whole; matmul kernels get
    blocks of the result and loop.vectorize (cache and register blocks);
    long reductions to a single value get loop.grid_reduce (rows reduced
    as parallel tasks) in the schedule of the kernel's first root.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90\"",
           "Target the schedules are for: a name in the table of "
           "dialects/loop/Target.cpp (cpu, sm_80, ..., sm_90a)">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "GPU: f32 matmuls on tensor cores as tf32 (inputs rounded to "
           "10-bit mantissas, f32 accumulation)">,
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "CPU: bits of a vector register (256: AVX2, 16 registers; 512: "
           "AVX-512, 32 registers), which size the register blocks; 0: the "
           "target's (this machine's for cpu)">,
    Option<"cores", "cores", "unsigned", /*default=*/"0",
           "CPU: cores that small kernels' tiles are shared out to; 0: the "
           "target's (this machine's for cpu)">,
  ];
  let dependentDialects = ["tessel::loop::LoopDialect", "mlir::gpu::GPUDialect"];
}

def LoopValidateSchedules : Pass<"loop-validate", "mlir::ModuleOp"> {
  let summary = "Reject schedules that cannot run on their target";
  let description = [{
    Walks each `loop.schedule` against its kernel and the target's limits:
    one tile size per loop of the kernel's root, GPU ids only on GPU
    targets and `parallel` only on the CPU, a block-level tile before any
    warp or thread level, at most 1024 threads per block, and the limits of
    loop.mma, loop.warp_reduce, loop.grid_reduce and loop.vectorize.
    Errors name the knob or tile, the value and the limit.
  }];
}

def LoopApplySchedules : Pass<"loop-apply-schedule", "mlir::ModuleOp"> {
  let summary = "Carry out each kernel's loop.schedule on its linalg";
  let description = [{
    For every `loop.schedule`, applies its primitives in order to the
    kernel's root op on tensors: `loop.tile` with a mapping tiles into an
    scf.forall carrying that mapping (#gpu.block, #gpu.warp, #gpu.thread),
    with `parallel` into an scf.forall without one, otherwise into scf.for
    loops; every linalg producer is fused into each tile. `loop.split_k`
    first splits the kernel's contraction into partial products over parts
    of K, which the levels tile (the part loop one index per tile of the
    first parallel level), and their sum, which gets the target's pointwise
    tiling. `loop.vectorize`
    register-blocks and vectorizes the tile's matmul; loop.mma and
    loop.warp_reduce mark ops for the GPU passes after bufferization.
    `loop.grid_reduce` splits the kernel's reductions to a single value
    into rows of partials, a block each, and moves their combination and
    the single-value ops after it into one block, both marked like
    loop.warp_reduce; on the CPU it goes first, the rows as parallel tasks
    in vectors of partial results (loop.split_reduction) and the
    combination computed once, and schedules of roots that are single
    values are then done. On GPUs, ops the schedules leave untiled get
    pointwise nests of their own. The schedule op is erased once applied.
    Run loop-validate first.
  }];
  let dependentDialects = [
    "mlir::bufferization::BufferizationDialect",
    "mlir::gpu::GPUDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
  ];
}

def LoopUnroll : Pass<"loop-unroll", "mlir::func::FuncOp"> {
  let summary = "Lower ops marked by loop.unroll to loops and unroll the innermost";
  let description = [{
    Runs on bufferized kernels: each linalg op carrying `tessel.unroll`
    (set by loop-apply-schedule from loop.unroll) becomes scf.for loops,
    and the innermost of them is unrolled by the factor, with a remainder
    loop when the factor does not divide its trip count.
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
  ];
}

def GpuLowerMma : Pass<"gpu-lower-mma", "mlir::func::FuncOp"> {
  let summary = "Lower contractions marked by loop.mma to tensor-core code";
  let description = [{
    Runs on bufferized kernels, inside their block-mapped scf.forall: each
    linalg.matmul carrying `tessel.mma` (a `#loop.mma_config` set by
    loop-apply-schedule from
    loop.mma, loop.promote and loop.pipeline) becomes a thread-mapped
    scf.forall of warps that copy A and B tiles to multi-buffered
    workgroup buffers with cp.async (nvgpu.device_async_copy, 16 bytes per
    copy, `stages - 1` K steps in flight), load fragments with
    nvgpu.ldmatrix and accumulate with nvgpu.mma.sync in registers. The
    fill that initializes the accumulator and an elementwise linalg.generic
    consuming it (the fused epilogue) are folded in: the epilogue runs on
    the registers and stores the kernel's result, so the f32 tile never
    goes to memory. A marked contraction in any other form is an error.

    A config of shape m 64 (sm_90a) becomes warpgroups issuing
    nvvm.wgmma.mma_async instead: the cp.async copies write A and B into
    128-byte-swizzled tiles (B in groups of 64 columns), which the
    instructions read through matrix descriptors after a
    fence.proxy.async; `stages - 2` K steps are in flight while one
    step's wgmma group is still running (`stages - 1` and none with two
    stages). The accumulators are LLVM structs in registers, read by the
    same epilogue.
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::arith::ArithDialect",
    "mlir::gpu::GPUDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::memref::MemRefDialect",
    "mlir::NVVM::NVVMDialect",
    "mlir::nvgpu::NVGPUDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

def GpuLowerBf16MmaSync : Pass<"gpu-lower-bf16-mma-sync"> {
  let summary = "Lower bf16 nvgpu.mma.sync to nvvm.mma.sync";
  let description = [{
    Upstream's convert-nvgpu-to-nvvm cannot lower nvgpu.mma.sync on bf16
    operands ("failed to deduce operand PTX types"). This rewrites each such
    m16n8k16 op with f32 accumulators into nvvm.mma.sync with bf16
    multiplicands: fragments packed two to an i32 register (as PTX takes
    them), the result struct unpacked into the accumulator vector. Run it
    on gpu.module ops before convert-nvgpu-to-nvvm; an unsupported bf16
    form is an error naming it.
  }];
  let dependentDialects = [
    "mlir::LLVM::LLVMDialect",
    "mlir::NVVM::NVVMDialect",
    "mlir::vector::VectorDialect",
  ];
}

def GpuExternDynamicShared : Pass<"gpu-extern-dynamic-shared"> {
  let summary = "Declare dynamic shared memory as the CUDA ABI's extern array";
  let description = [{
    Runs after convert-gpu-to-nvvm: every zero-sized workgroup
    `llvm.mlir.global` (what gpu.dynamic_shared_memory lowers to) gets
    external linkage, so that NVPTX declares it as
    `.extern .shared .align N .b8 name[];`, the dynamic region the driver
    allocates, rather than demoting it into the kernel as a one-byte
    static variable that the kernel then indexes past.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def GpuCapRegisters : Pass<"gpu-cap-registers", "mlir::gpu::GPUModuleOp"> {
  let summary = "Give kernels that move registers between warpgroups a register cap";
  let description = [{
    A kernel whose warpgroups hand registers to each other
    (nvvm.setmaxregister: the producer warpgroup of a warp-specialized
    wgmma kernel gives up registers that its consumers take) gets
    `nvvm.minctasm = 1` (PTX `.minnctapersm 1`): ptxas then starts every
    thread at an equal share of the SM's registers, which the moves
    redistribute. Without a cap at entry ptxas ignores setmaxnreg and
    serializes the kernel's wgmma instructions.
  }];
  let dependentDialects = ["mlir::NVVM::NVVMDialect"];
}

def GpuDistributeRows : Pass<"gpu-distribute-rows", "mlir::func::FuncOp"> {
  let summary = "Share each row of a loop.warp_reduce block tile among its threads";
  let description = [{
    Runs on bufferized kernels: the block tile (an scf.forall) holding a
    root marked `tessel.warp_reduce = T` (set by loop-apply-schedule from
    loop.warp_reduce) becomes a T-thread scf.forall in which thread t takes
    columns t, t + T, ... of every op over the row. Reductions combine
    per-thread partials with warp shuffles (gpu.shuffle xor) and, across
    warps, a workgroup buffer; elementwise results internal to the tile are
    recomputed where read instead of stored. A row of dynamic length (over
    a size symbol, or a grid reduction's uneven rows) is walked to its
    length. When a thread has at most 32 columns of a static row, or of a
    dynamic row at its largest (`tessel.row_columns`; then single columns,
    masked past the row's length), they are unrolled instead: chunks of up
    to 8 adjacent columns,
    every value of the row made once and kept in registers across passes,
    aligned loads and stores of whole chunks as vectors. Ops without loops
    (or whose loops all have one point) are ops on single values of the
    row. An op of another form is an error naming it.
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect",
    "mlir::arith::ArithDialect",
    "mlir::gpu::GPUDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

def LoopVectorAccess : Pass<"loop-vector-access", "mlir::func::FuncOp"> {
  let summary = "Move the points of loop.vector_access threads as vectors";
  let description = [{
    Runs on bufferized kernels: each elementwise linalg.generic carrying
    `tessel.vector_access = W` (set by loop-apply-schedule from
    loop.vector_access) whose loops are one point each but the innermost,
    of at most W points, is computed point by point on registers: operands
    whose innermost index is that loop are loaded as one vector of W
    elements where their buffer and the tile's offsets make it aligned
    (kernels get 16-byte aligned buffers), operands that do not read it
    once, others per point; the output is stored the same way. A tile of
    fewer than W points (the edge of a loop that W does not divide) keeps
    the op, under an scf.if. GPU schedules mark ops; the CPU pipeline runs
    the pass too, so that their semantics are checked on the CPU.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

def GpuPassDynamicBuffers : Pass<"gpu-pass-dynamic-buffers", "mlir::ModuleOp"> {
  let summary = "Pass buffers of dynamic shape into kernels as static buffers and sizes";
  let description = [{
    Kernels take one pointer per buffer (the bare-pointer ABI), which only a
    static memref type can be. Each buffer of dynamic shape (over size
    symbols) that a gpu.launch reads becomes a static 1-D buffer of its
    largest size over the symbols' ranges (graph.dims of its kernel
    function), from which the launch rebuilds its view with the dynamic
    sizes; gpu-kernel-outlining passes those sizes as kernel arguments. Run
    right before outlining.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::memref::MemRefDialect"];
}

def GpuMapKernels : Pass<"gpu-map-kernels", "mlir::ModuleOp"> {
  let summary = "Turn each bufferized kernel's mapped scf.forall nests into gpu.launch ops";
  let description = [{
    After bufferization, each top-level block-mapped scf.forall of a
    `tessel.kernel` function becomes a gpu.launch whose grid is the forall's
    trip counts, and nested thread/warp-mapped foralls become thread ids
    (upstream's map_forall_to_blocks and map_nested_forall_to_threads, run
    through the transform interpreter); the block size is the largest
    thread-level forall. Computation outside any such forall runs in a
    1x1x1 launch. Buffers allocated inside a launch become per-thread stack
    allocations, and views of the kernel's buffers and constant globals are
    recreated inside each launch that uses them, so that a launch's operands
    are the host program's buffers. Workgroup buffers become views of the
    launch's dynamic shared memory, whose size the launch records. Follow
    with gpu-kernel-outlining.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::gpu::GPUDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::memref::MemRefDialect",
    "mlir::transform::TransformDialect",
  ];
}

#endif // TESSEL_PASSES
