//===- Pipelines.cpp - tessel's named pass pipelines ----------------------===//
//
// The stages every compile runs, in order (docs/architecture.md, "Pass
// pipeline"), each a pipeline of its own: graph, linalg, schedule,
// bufferize, then cpu-lower or gpu-lower. Target facts (PTX features, the
// chip, the host's cores and vector width) come from the target table when
// a pipeline is built, never from the caller's text.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"

#include "dialects/loop/Target.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace tessel;

namespace {

using ErrorHandler = function_ref<LogicalResult(const Twine &)>;

struct TargetOptions : PassPipelineOptions<TargetOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("The target whose kernels the "
                                            "stage makes (cpu, sm_80, ...)"),
                             llvm::cl::init("cpu")};
};

struct ScheduleOptions : PassPipelineOptions<ScheduleOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("The target whose default "
                                            "schedules kernels get"),
                             llvm::cl::init("cpu")};
  Option<bool> allowTf32{*this, "allow-tf32",
                         llvm::cl::desc("GPU: f32 matmuls on tensor cores "
                                        "as tf32"),
                         llvm::cl::init(false)};
};

/// Both compiles' `scheduled` option (a tuned or hand-scheduled module).
constexpr const char *kScheduledHelp =
    "The module's kernels are in linalg with loop.schedule ops already: "
    "start at the schedule stage";

struct CpuCompileOptions : PassPipelineOptions<CpuCompileOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("The target whose schedules the "
                                          "CPU runs: cpu, or a GPU's, to "
                                          "check them"),
                           llvm::cl::init("cpu")};
  Option<bool> scheduled{*this, "scheduled", llvm::cl::desc(kScheduledHelp),
                         llvm::cl::init(false)};
};

struct CudaCompileOptions : PassPipelineOptions<CudaCompileOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("The GPU"),
                           llvm::cl::init("")};
  Option<bool> allowTf32{*this, "allow-tf32",
                         llvm::cl::desc("f32 matmuls on tensor cores as "
                                        "tf32"),
                         llvm::cl::init(false)};
  Option<bool> scheduled{*this, "scheduled", llvm::cl::desc(kScheduledHelp),
                         llvm::cl::init(false)};
};

/// The target named `name` (a GPU where `gpu`), or the error saying why not.
const loop::TargetDescription *target(StringRef name, StringRef pipeline,
                                      ErrorHandler error, bool gpu = false) {
  const loop::TargetDescription *d = loop::lookupTarget(name);
  if (!d)
    (void)error(pipeline + ": unknown target '" + name + "'; expected one of: " +
                llvm::join(loop::targetNames(), ", "));
  else if (gpu && d->isCpu())
    (void)error(pipeline + ": '" + name + "' is not a GPU");
  else
    return d;
  return nullptr;
}

std::string graphStage() {
  return "graph-decompose,canonicalize,cse,func.func(graph-form-fusion-"
         "groups),graph-outline-kernels";
}

/// On GPUs convolutions read their padding through bounds tests (a padded
/// copy of the input would run in one thread); the CPU copies, which is
/// faster than testing each element of the patches, and collapses
/// reductions over several axes into one loop for loop.split_reduction.
std::string linalgStage(const loop::TargetDescription &t) {
  return std::string("graph-to-linalg{destinations},canonicalize,cse,func.func(cpu-fuse-"
                     "elementwise,") +
         (t.isCpu() ? "cpu-collapse-reductions,linalg-im2col"
                    : "linalg-im2col{fold-padding}") +
         ",linalg-sink-reshapes),resolve-ranked-shaped-type-result-dims,"
         "canonicalize,host-dedupe-kernel-results";
}

/// Default schedules for kernels that have none, validated, then applied;
/// on the CPU, gathers then read their index once per row and convolution
/// tiles left as such are vectorized by output rows.
std::string scheduleStage(const loop::TargetDescription &t, bool allowTf32) {
  return "loop-default-schedule{target=" + t.name +
         " allow-tf32=" + (allowTf32 ? "true" : "false") +
         "},loop-validate,loop-apply-schedule,canonicalize," +
         (t.isCpu() ? "func.func(cpu-gather-rows,cpu-vectorize-convolutions),"
                      "canonicalize,"
                    : "") +
         "cse";
}

std::string bufferizeStage() {
  return "one-shot-bufferize{bufferize-function-boundaries "
         "function-boundary-type-conversion=identity-layout-map},"
         "host-drop-destination-results,"
         "buffer-results-to-out-params{hoist-static-allocs "
         "modify-public-functions},"
         "func.func(buffer-hoisting,buffer-loop-hoisting),buffer-"
         "deallocation-pipeline,"
         "func.func(optimize-allocation-liveness,host-reuse-buffers)";
}

/// Buffers to LLVM for this machine (the `cpu` target: its cores, vector
/// registers and non-temporal stores).
std::string cpuLowerStage() {
  const loop::TargetDescription &cpu = *loop::lookupTarget("cpu");
  // Non-temporal stores skip the write-allocate read (x86: movntps).
  int64_t streaming =
      cpu.has(loop::Instruction::NonTemporalStores) ? cpu.vectorBits : 0;
  return "func.func(cpu-drop-redundant-writes,loop-vector-access),"
         "cpu-serialize-inner-foralls,"
         "func.func(scf-forall-to-parallel),cpu-expand-strided-copies,"
         "func.func(cpu-interchange-reductions,loop-unroll),"
         "func.func(cpu-streaming-stores{vector-bits=" +
         std::to_string(streaming) +
         "},cpu-vectorize-copies),convert-linalg-to-loops,"
         "convert-vector-to-scf{full-unroll},"
         // Tiles of a kernel's scf.forall become tasks of the async runtime.
         "async-parallel-for{num-workers=" +
         std::to_string(cpu.cores) +
         " min-task-size=1},async-to-async-runtime,async-runtime-ref-"
         "counting,async-runtime-ref-counting-opt,"
         "arith-emulate-unsupported-floats{source-types=bf16 "
         "target-type=f32},arith-expand{include-bf16},"
         "cpu-flatten-constants,memref-expand-shapes-as-casts,"
         "expand-strided-metadata,lower-affine,"
         "cpu-approximate-math,"
         "convert-math-to-llvm,convert-math-to-libm,convert-async-to-llvm,"
         "convert-scf-to-cf,"
         "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
         "convert-to-llvm,reconcile-unrealized-casts,"
         // Loops left to LLVM's vectorizer at the width the schedules use.
         "cpu-prefer-vector-width{bits=" +
         std::to_string(cpu.vectorBits) + "}";
}

/// Mapped loops to launches, outlined kernels, NVVM, PTX. Only kernels are
/// lowered: views between launches stay views for the host program; one
/// pointer per (static) memref argument.
std::string gpuLowerStage(const loop::TargetDescription &t) {
  return "func.func(gpu-lower-mma,gpu-distribute-rows,loop-vector-access,"
         "loop-unroll),gpu-map-kernels,canonicalize,"
         "gpu-launch-sink-index-computations,gpu-pass-dynamic-buffers,"
         "gpu-kernel-outlining,"
         "canonicalize,nvvm-attach-target{chip=" +
         t.chip() + " features=" + t.ptxFeatures +
         " O=3},gpu.module(gpu-cap-registers,convert-linalg-to-loops,"
         "gpu-lower-bf16-mma-sync,"
         "convert-nvgpu-to-nvvm,memref-expand-shapes-as-casts,"
         "expand-strided-metadata,lower-affine,"
         "convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-"
         "conv},"
         // NVVM ops that LLVM has no intrinsic for (wgmma) as inline PTX.
         "convert-nvvm-to-llvm,gpu-extern-dynamic-shared,canonicalize,cse),"
         "reconcile-unrealized-casts,gpu-module-to-binary{format=isa}";
}

/// Registers `name`, whose passes `build` writes for the parsed options
/// (empty text: the options were refused, and `build` said why).
template <typename Options>
void registerPipeline(
    StringRef name, StringRef description,
    std::function<std::string(const Options &, ErrorHandler)> build) {
  registerPassPipeline(
      name, description,
      [name, build](OpPassManager &pm, StringRef text, ErrorHandler error) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string passes = build(options, error);
        if (passes.empty())
          return failure();
        std::string why;
        llvm::raw_string_ostream os(why);
        if (failed(parsePassPipeline(passes, pm, os)))
          return error(name + ": " + why);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(Options());
      });
}

/// Registers stage `name`, which `stage` writes for its `target` option (a
/// GPU where `gpu`).
void registerTargetStage(StringRef name, StringRef description, bool gpu,
                         std::string (*stage)(const loop::TargetDescription &)) {
  registerPipeline<TargetOptions>(
      name, description,
      [name, gpu, stage](const TargetOptions &o,
                         ErrorHandler error) -> std::string {
        const loop::TargetDescription *t = target(o.target, name, error, gpu);
        return t ? stage(*t) : "";
      });
}

} // namespace

void tessel::registerTesselPipelines() {
  using None = EmptyPipelineOptions;
  registerPipeline<None>(
      "tessel-graph-pipeline",
      "Stage 'graph': decompose, fold, form fusion groups, outline kernels",
      [](const None &, ErrorHandler) { return graphStage(); });
  registerPipeline<None>(
      "tessel-to-linalg-pipeline",
      "tessel.to_linalg: every graph op in upstream dialects (linalg on "
      "tensors), composites decomposed, for mlir-opt or another compiler",
      [](const None &, ErrorHandler) {
        return "graph-decompose,graph-to-linalg,canonicalize,cse";
      });
  registerTargetStage("tessel-linalg-pipeline",
                      "Stage 'graph-to-linalg': kernels in linalg for `target`",
                      false, linalgStage);
  registerPipeline<ScheduleOptions>(
      "tessel-schedule-pipeline",
      "Stage 'schedule': default schedules for `target`, validated, applied",
      [](const ScheduleOptions &o, ErrorHandler error) -> std::string {
        auto *t = target(o.target, "tessel-schedule-pipeline", error);
        return t ? scheduleStage(*t, o.allowTf32) : "";
      });
  registerPipeline<None>(
      "tessel-bufferize-pipeline", "Stage 'bufferize': tensors to buffers",
      [](const None &, ErrorHandler) { return bufferizeStage(); });
  registerPipeline<None>(
      "tessel-cpu-lower-pipeline",
      "Stage 'lower-to-llvm': buffers to LLVM for this machine's CPU",
      [](const None &, ErrorHandler) { return cpuLowerStage(); });
  registerTargetStage(
      "tessel-gpu-lower-pipeline",
      "Stage 'gpu': launches, kernels, NVVM and PTX for GPU `target`", true,
      gpuLowerStage);

  // Whole compiles: the stages above in order.
  auto front = [](const loop::TargetDescription &t, bool scheduled) {
    return scheduled ? std::string()
                     : graphStage() + "," + linalgStage(t) + ",";
  };
  registerPipeline<CpuCompileOptions>(
      "tessel-cpu-pipeline",
      "tessel.compile(target='cpu') up to LLVM IR; chip=<gpu> runs that "
      "GPU's schedules on the CPU",
      [front](const CpuCompileOptions &o, ErrorHandler error) -> std::string {
        auto *t = target(o.chip, "tessel-cpu-pipeline", error);
        if (!t)
          return "";
        return front(*t, o.scheduled) + scheduleStage(*t, false) + "," +
               bufferizeStage() + "," + cpuLowerStage();
      });
  registerPipeline<CudaCompileOptions>(
      "tessel-cuda-pipeline",
      "tessel.compile(target='cuda:<chip>') up to the PTX",
      [front](const CudaCompileOptions &o, ErrorHandler error) -> std::string {
        auto *t = target(o.chip, "tessel-cuda-pipeline", error, true);
        if (!t)
          return "";
        return front(*t, o.scheduled) + scheduleStage(*t, o.allowTf32) + "," +
               bufferizeStage() + "," + gpuLowerStage(*t);
      });
}
