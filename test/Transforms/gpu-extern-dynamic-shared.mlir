// RUN: tessel-opt %s --pass-pipeline="builtin.module(gpu.module(gpu-extern-dynamic-shared))" | FileCheck %s
// RUN: tessel-opt %s --pass-pipeline="builtin.module(gpu.module(gpu-extern-dynamic-shared),gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// The zero-sized workgroup global of gpu.dynamic_shared_memory becomes
// external and 1 KiB aligned (where a 128-byte swizzle repeats); sized workgroup globals (static shared memory) and other
// zero-sized globals keep their linkage.
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
// CHECK: llvm.mlir.global internal @empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX-NOT: .extern .shared {{.*}}tile
gpu.module @m [#nvvm.target<chip = "sm_80", features = "+ptx70">] {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
  llvm.mlir.global internal @empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
  llvm.func @k(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
    %d = llvm.mlir.addressof @__dynamic_shmem__0 : !llvm.ptr<3>
    %t = llvm.mlir.addressof @tile : !llvm.ptr<3>
    %v = llvm.load %in : !llvm.ptr<1> -> f32
    llvm.store %v, %d : f32, !llvm.ptr<3>
    llvm.store %v, %t : f32, !llvm.ptr<3>
    nvvm.barrier0
    %x = llvm.load %d : !llvm.ptr<3> -> f32
    %y = llvm.load %t : !llvm.ptr<3> -> f32
    %z = llvm.fadd %x, %y : f32
    llvm.store %z, %out : f32, !llvm.ptr<1>
    llvm.return
  }
}
