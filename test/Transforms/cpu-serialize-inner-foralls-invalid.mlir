// RUN: tessel-opt %s --verify-diagnostics --cpu-serialize-inner-foralls

// Before bufferization (out of pipeline order): an error, not an assertion.
func.func @on_tensors(%t: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = scf.forall (%i) in (4) shared_outs(%o = %t) -> (tensor<4x4xf32>) {
    %row = tensor.extract_slice %o[%i, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
    // expected-error @below {{cpu-serialize-inner-foralls runs after bufferization; this nested scf.forall still has tensor results}}
    %1 = scf.forall (%j) in (4) shared_outs(%p = %row) -> (tensor<1x4xf32>) {
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %p into %p[0, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<1x4xf32>
      }
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %1 into %o[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<4x4xf32>
    }
  }
  return %0 : tensor<4x4xf32>
}
