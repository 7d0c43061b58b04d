// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(gpu.module(gpu-lower-bf16-mma-sync))" | FileCheck %s
// RUN: tessel-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(gpu.module(gpu-lower-bf16-mma-sync,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// bf16 fragments go to nvvm.mma.sync two to a 32-bit register; f16 ones
// stay for upstream's convert-nvgpu-to-nvvm.
// CHECK-LABEL: gpu.func @k
// CHECK-COUNT-6: vector.bitcast {{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK: nvvm.mma.sync A[{{.*}}, {{.*}}, {{.*}}, {{.*}}] B[{{.*}}, {{.*}}] C[{{.*}}, {{.*}}, {{.*}}, {{.*}}]
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: vector.from_elements {{.*}} : vector<2x2xf32>
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>)
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
gpu.module @m [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  gpu.func @k(%sm: memref<32x32xbf16, #gpu.address_space<workgroup>>, %sh: memref<32x32xf16, #gpu.address_space<workgroup>>, %out: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %acc = arith.constant dense<0.0> : vector<2x2xf32>
    %a = nvgpu.ldmatrix %sm[%c0, %c0] {numTiles = 4 : i32, transpose = false} : memref<32x32xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %b = nvgpu.ldmatrix %sm[%c0, %c0] {numTiles = 2 : i32, transpose = true} : memref<32x32xbf16, #gpu.address_space<workgroup>> -> vector<2x2xbf16>
    %r = nvgpu.mma.sync (%a, %b, %acc) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %ha = nvgpu.ldmatrix %sh[%c0, %c0] {numTiles = 4 : i32, transpose = false} : memref<32x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    %hb = nvgpu.ldmatrix %sh[%c0, %c0] {numTiles = 2 : i32, transpose = true} : memref<32x32xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    %h = nvgpu.mma.sync (%ha, %hb, %acc) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %r[0, 1] : f32 from vector<2x2xf32>
    %f = vector.extract %h[1, 0] : f32 from vector<2x2xf32>
    memref.store %e, %out[%c0] : memref<2xf32>
    memref.store %f, %out[%c1] : memref<2xf32>
    gpu.return
  }
}

// -----

// PTX has bf16 mma.sync in m16n8k8 too, but tessel emits only m16n8k16: any
// other bf16 form is an error, not a miscompile.
gpu.module @m [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  gpu.func @k8(%a: vector<2x2xbf16>, %b: vector<1x2xbf16>, %out: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %acc = arith.constant dense<0.0> : vector<2x2xf32>
    // expected-error @+1 {{gpu-lower-bf16-mma-sync: bf16 mma.sync must be m16n8k16 on bf16 A and B with f32 accumulators}}
    %r = nvgpu.mma.sync (%a, %b, %acc) {mmaShape = [16, 8, 8]} : (vector<2x2xbf16>, vector<1x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %r[0, 0] : f32 from vector<2x2xf32>
    memref.store %e, %out[%c0] : memref<1xf32>
    gpu.return
  }
}
