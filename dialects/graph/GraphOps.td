//===- GraphOps.td - tessel graph dialect ------------------*- tablegen -*-===//
//
// The `graph` dialect states what a model computes, tensor op by tensor op,
// with numpy-style shape rules. Graph-level optimization (folding, CSE,
// fusion-group formation) works here; each fusion group later lowers to one
// kernel of linalg on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_GRAPH_OPS
#define TESSEL_GRAPH_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::tessel::graph";
  let summary = "Tensor-level model graphs with numpy shape rules";
  let description = [{
    Ops on ranked tensors of f32, f16, bf16, i32, i64 and i1. Elementwise
    binary ops broadcast like numpy; matmul broadcasts its batch dimensions.
    Result types are inferred, so a mismatch between operands is a verifier
    error at the op's location. `graph.fused` groups ops that become one
    kernel.
  }];
  let hasConstantMaterializer = 1;
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

def Graph_ElementType : AnyTypeOf<[F32, F16, BF16, I32, I64, I1]>;
def Graph_Tensor : RankedTensorOf<[F32, F16, BF16, I32, I64, I1]>;
def Graph_NumericTensor : RankedTensorOf<[F32, F16, BF16, I32, I64]>;
def Graph_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "Dense or splat tensor constant";
  let description = [{
    ```mlir
    %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %z = graph.constant dense<0.0> : tensor<128x64xf16>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// Binary ops broadcast their operands like numpy; the result shape is inferred.
class Graph_BroadcastBinaryOp<string mnemonic, Type operandType,
                              list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits,
        [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferBroadcastResultType(loc, adaptor.getLhs().getType(),
                                      adaptor.getRhs().getType(), results);
    }
  }];
}

def Graph_AddOp : Graph_BroadcastBinaryOp<"add", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise addition with numpy broadcasting";
}
def Graph_SubOp : Graph_BroadcastBinaryOp<"sub", Graph_NumericTensor> {
  let summary = "Elementwise subtraction with numpy broadcasting";
}
def Graph_MulOp : Graph_BroadcastBinaryOp<"mul", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise multiplication with numpy broadcasting";
}
def Graph_DivOp : Graph_BroadcastBinaryOp<"div", Graph_NumericTensor> {
  let summary = "Elementwise division with numpy broadcasting";
  let description = [{ Integer division rounds toward zero, like C. }];
}
def Graph_MaximumOp : Graph_BroadcastBinaryOp<"maximum", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise maximum with numpy broadcasting (NaN propagates)";
}
def Graph_MinimumOp : Graph_BroadcastBinaryOp<"minimum", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise minimum with numpy broadcasting (NaN propagates)";
}

class Graph_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits,
        [Pure, SameOperandsAndResultType])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", Graph_NumericTensor> {
  let summary = "max(x, 0), elementwise";
}
def Graph_NegOp : Graph_UnaryOp<"neg", Graph_NumericTensor> {
  let summary = "-x, elementwise";
}
def Graph_ExpOp : Graph_UnaryOp<"exp", Graph_FloatTensor> {
  let summary = "e^x, elementwise";
}
def Graph_TanhOp : Graph_UnaryOp<"tanh", Graph_FloatTensor> {
  let summary = "tanh(x), elementwise";
}
def Graph_AbsOp : Graph_UnaryOp<"abs", Graph_NumericTensor> {
  let summary = "|x|, elementwise";
}
def Graph_LogOp : Graph_UnaryOp<"log", Graph_FloatTensor> {
  let summary = "natural logarithm, elementwise";
}
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", Graph_FloatTensor> {
  let summary = "square root, elementwise";
}
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", Graph_FloatTensor> {
  let summary = "1 / sqrt(x), elementwise";
}
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", Graph_FloatTensor> {
  let summary = "1 / (1 + exp(-x)), elementwise";
}
def Graph_SiluOp : Graph_UnaryOp<"silu", Graph_FloatTensor> {
  let summary = "x * sigmoid(x), elementwise";
}
def Graph_GeluOp : Graph_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "GELU, exact (erf) or with the tanh approximation";
  let description = [{
    Exact: `0.5 x (1 + erf(x / sqrt(2)))`. With `approximate tanh`:
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`, as
    `torch.nn.functional.gelu(approximate="tanh")`.

    ```mlir
    %0 = graph.gelu %x : tensor<8x768xf32>
    %1 = graph.gelu %x approximate tanh : tensor<8x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, UnitAttr:$approximate_tanh);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `tanh` $approximate_tanh^)? attr-dict `:` type($input)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "Matrix product with broadcast batch dimensions (numpy.matmul)";
  let description = [{
    `lhs` is `[batch..., M, K]` and `rhs` is `[batch..., K, N]`; the batch
    dimensions broadcast like numpy and the result is `[batch..., M, N]`.
    Both operands have rank 2 or more and the same element type.

    ```mlir
    %y = graph.matmul %x, %w : (tensor<8x64x32xf32>, tensor<32x16xf32>) -> tensor<8x64x16xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$lhs, Graph_NumericTensor:$rhs);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Fusion groups
//===----------------------------------------------------------------------===//

def Graph_FusionKind : I32EnumAttr<"FusionKind", "what a fusion group is built around", [
    I32EnumAttrCase<"elementwise", 0>,
    I32EnumAttrCase<"reduction", 1>,
    I32EnumAttrCase<"contraction", 2>
  ]> {
  let cppNamespace = "::tessel::graph";
}

def Graph_FusedOp : Graph_Op<"fused", [IsolatedFromAbove, RecursiveMemoryEffects]> {
  let summary = "A group of graph ops that compiles to one kernel";
  let description = [{
    The body computes the results from the block arguments, which stand for
    `inputs` in order. `kind` names what the group is built around: an
    elementwise chain, a reduction with its elementwise producers, or a
    contraction (matmul/conv) with its epilogue. The region is isolated from
    above, so a group lowers to a kernel function on its own.

    ```mlir
    %r = graph.fused contraction (%x, %w, %b) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16xf32>):
      %0 = graph.matmul %a, %c : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      %1 = graph.add %0, %d : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
      graph.yield %1 : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins Graph_FusionKind:$kind, Variadic<Graph_Tensor>:$inputs);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Graph_YieldOp : Graph_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"FusedOp">]> {
  let summary = "Returns the results of a fusion group";
  let arguments = (ins Variadic<Graph_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TESSEL_GRAPH_OPS
