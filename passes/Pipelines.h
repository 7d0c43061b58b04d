//===- Pipelines.h - tessel's named pass pipelines --------------*- C++ -*-===//
//
// Each target's whole compile, and each of its stages, as a registered pass
// pipeline with typed options, so that `tessel-opt --tessel-cuda-pipeline=
// 'chip=sm_90' model.mlir` replays what tessel.compile runs up to the PTX.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_PIPELINES_H
#define TESSEL_PASSES_PIPELINES_H

namespace tessel {

/// Registers the pipelines with the global pass registry (once per process,
/// as registerTesselPasses).
void registerTesselPipelines();

} // namespace tessel

#endif // TESSEL_PASSES_PIPELINES_H
