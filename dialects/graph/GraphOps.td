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

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/TensorEncoding.td"
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
  let useDefaultAttributePrinterParser = 1;
  // `graph.dims` on a function declares its size symbols.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The function attribute that declares a function's size symbols.
    static constexpr ::llvm::StringLiteral kDimsAttrName = "graph.dims";

  private:
    void registerAttributes();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Symbolic sizes (docs/dynamic-shapes.md)
//===----------------------------------------------------------------------===//

def Graph_ShapeAttr : AttrDef<Graph_Dialect, "Shape",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "shape";
  let summary = "The sizes of a tensor's dims over its function's size symbols";
  let description = [{
    A tensor type's encoding: one entry per dim, an integer for a static
    dim or an expression over named size symbols for a `?` one, e.g.
    `tensor<?x?x256xf32, #graph.shape<[batch, 2 * seq, 256]>>`. Expressions
    take `+`, `-`, `*` (of two symbols too), `floordiv`, `ceildiv`, `mod`
    and parentheses; they are stored as an AffineMap over symbols, one per
    name. The function's `graph.dims` declares each name's range.
  }];
  let parameters = (ins "::mlir::AffineMap":$sizes,
                        ArrayRefParameter<"::mlir::StringAttr", "symbol names">:$names);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Graph_DimAttr : AttrDef<Graph_Dialect, "Dim"> {
  let mnemonic = "dim";
  let summary = "The range of a size symbol";
  let description = [{
    `#graph.dim<1, 2048>`: sizes 1 to 2048; `#graph.dim<8, 2048, multiple_of 8>`
    also requires a multiple of 8. Values of `graph.dims`, a function's
    dictionary from symbol names to their ranges.
  }];
  let parameters = (ins "int64_t":$min, "int64_t":$max, DefaultValuedParameter<"int64_t", "1">:$multiple);
  let assemblyFormat = "`<` $min `,` $max (`,` `multiple_of` $multiple^)? `>`";
  let genVerifyDecl = 1;
}

// The op's shape rules read size symbols (#graph.shape); a graph op
// without it refuses tensors that carry them.
def Graph_SymbolicSizes : NativeOpTrait<"GraphSymbolicSizes">;

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

def Graph_ElementType : AnyTypeOf<[F32, F16, BF16, F64, I8, I16, I32, I64, I1]>;
// Every tensor's size in bytes fits in an int64 (sizes, strides and
// offsets are int64 from shape inference to the kernels' address
// arithmetic), and its rank is at most numpy's 64.
class Graph_TensorOf<list<Type> elements>
    : ConfinedType<RankedTensorOf<elements>,
                   [CPred<"::tessel::graph::hasSupportedShape("
                          "::llvm::cast<::mlir::ShapedType>($_self))">],
                   RankedTensorOf<elements>.summary #
                       " of rank at most 64 and less than 2^63 bytes">;
def Graph_Tensor : Graph_TensorOf<[F32, F16, BF16, F64, I8, I16, I32, I64, I1]>;
def Graph_NumericTensor : Graph_TensorOf<[F32, F16, BF16, F64, I8, I16, I32, I64]>;
def Graph_FloatTensor : Graph_TensorOf<[F32, F16, BF16, F64]>;

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

def Graph_IotaOp : Graph_Op<"iota", [Pure, Graph_SymbolicSizes]> {
  let summary = "Each element its index along one dimension";
  let description = [{
    numpy's `arange` along `dim`, repeated along the other dims, in the
    result's element type (an integer or float type). Its size may be a
    size symbol, so a causal mask over a sequence of any length is two
    iotas and a comparison; fusion clones it into each group that reads it,
    as it does small constants.

    ```mlir
    %rows = graph.iota dim 0 : tensor<?x1xi64, #graph.shape<[seq, 1]>>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "`dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// Binary ops broadcast their operands like numpy; the result shape is inferred.
class Graph_BroadcastBinaryOp<string mnemonic, Type operandType,
                              list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits,
        [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor,
         Graph_SymbolicSizes])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)
  }];
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferBroadcastResultType(loc, adaptor.getLhs().getType(),
                                      adaptor.getRhs().getType(), results);
    }
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return foldElementwise(*this, adaptor.getOperands());
    }
  }];
}

def Graph_AddOp : Graph_BroadcastBinaryOp<"add", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise addition with numpy broadcasting";
  let hasCanonicalizer = 1;
}
def Graph_SubOp : Graph_BroadcastBinaryOp<"sub", Graph_NumericTensor> {
  let summary = "Elementwise subtraction with numpy broadcasting";
}
def Graph_MulOp : Graph_BroadcastBinaryOp<"mul", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise multiplication with numpy broadcasting";
  let hasCanonicalizer = 1;
}
def Graph_DivOp : Graph_BroadcastBinaryOp<"div", Graph_NumericTensor> {
  let summary = "Elementwise division with numpy broadcasting";
  let description = [{ Integer division rounds toward zero, like C. }];
}
def Graph_RemOp : Graph_BroadcastBinaryOp<"rem", Graph_NumericTensor> {
  let summary = "Remainder of the truncated division, with numpy broadcasting";
  let description = [{
    `x - trunc(x / y) * y`, exactly: the sign of `x`, as C's `fmod` and `%`.
    An integer remainder by 0 is 0, as numpy's `fmod`; a float one is NaN.
  }];
}
def Graph_MaximumOp : Graph_BroadcastBinaryOp<"maximum", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise maximum with numpy broadcasting (NaN propagates)";
}
def Graph_MinimumOp : Graph_BroadcastBinaryOp<"minimum", Graph_NumericTensor, [Commutative]> {
  let summary = "Elementwise minimum with numpy broadcasting (NaN propagates)";
}

class Graph_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits,
        [Pure, SameOperandsAndResultType, Graph_SymbolicSizes])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return foldElementwise(*this, adaptor.getOperands());
    }
  }];
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
def Graph_SinOp : Graph_UnaryOp<"sin", Graph_FloatTensor> {
  let summary = "sin(x), radians, elementwise";
}
def Graph_CosOp : Graph_UnaryOp<"cos", Graph_FloatTensor> {
  let summary = "cos(x), radians, elementwise";
}
def Graph_ErfOp : Graph_UnaryOp<"erf", Graph_FloatTensor> {
  let summary = "the error function, elementwise";
}
def Graph_FloorOp : Graph_UnaryOp<"floor", Graph_FloatTensor> {
  let summary = "the largest integer not above x, elementwise";
}
def Graph_CeilOp : Graph_UnaryOp<"ceil", Graph_FloatTensor> {
  let summary = "the smallest integer not below x, elementwise";
}
def Graph_RoundOp : Graph_UnaryOp<"round", Graph_FloatTensor> {
  let summary = "the nearest integer, halves to even, elementwise";
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
def Graph_GeluOp : Graph_Op<"gelu", [Pure, SameOperandsAndResultType, Graph_SymbolicSizes]> {
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
  let hasFolder = 1;
}

def Graph_PowOp : Graph_BroadcastBinaryOp<"pow", Graph_FloatTensor> {
  let summary = "lhs ^ rhs, elementwise, with numpy broadcasting";
}

def Graph_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "an elementwise comparison", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>
  ]> {
  let cppNamespace = "::tessel::graph";
}

def Graph_CompareOp : Graph_Op<"compare", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Elementwise comparison with numpy broadcasting, giving i1";
  let description = [{
    Float comparisons are ordered (false when either side is NaN) except
    `ne`, which is true for NaN, as in numpy.

    ```mlir
    %m = graph.compare lt, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins Graph_ComparePredicate:$predicate, Graph_Tensor:$lhs,
                       Graph_Tensor:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)
  }];
}

def Graph_SelectOp : Graph_Op<"select", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "cond ? lhs : rhs, elementwise, all three broadcast (numpy.where)";
  let arguments = (ins RankedTensorOf<[I1]>:$condition, Graph_Tensor:$lhs,
                       Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` `(` type($condition) `,` type($lhs) `,` type($rhs) `)` `->` type($result)
  }];
}

def Graph_CastOp : Graph_Op<"cast", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Element type conversion (numpy astype semantics)";
  let description = [{
    Floats round to nearest; float to integer truncates toward zero; to i1
    is `x != 0`; from i1 gives 0 or 1.

    ```mlir
    %h = graph.cast %x to f16 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, TypeAttrOf<Graph_ElementType>:$element_type);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input `to` $element_type attr-dict `:` type($input)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

def Graph_ReduceKind : I32EnumAttr<"ReduceKind", "how a reduction combines", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>
  ]> {
  let cppNamespace = "::tessel::graph";
}

def Graph_ReduceOp : Graph_Op<"reduce", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Sum, mean, max or min over any set of axes";
  let description = [{
    `axes` lists distinct dimensions in [-rank, rank); negative ones count
    from the end. With `keepdims` the reduced dimensions stay as size 1.
    `mean` takes float tensors. f16/bf16 sums accumulate in f32.

    ```mlir
    %s = graph.reduce sum %x axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Graph_ReduceKind:$kind, Graph_NumericTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $input `axes` $axes (`keepdims` $keepdims^)? attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The reduced dimensions, non-negative and sorted.
    ::llvm::SmallVector<int64_t> getReducedDims();
  }];
}

class Graph_AxisOp<string mnemonic> : Graph_Op<mnemonic,
    [Pure, SameOperandsAndResultType, Graph_SymbolicSizes]> {
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_AxisOp<"softmax"> {
  let summary = "exp(x - max) / sum(exp(x - max)) along one axis";
}
def Graph_LogSoftmaxOp : Graph_AxisOp<"log_softmax"> {
  let summary = "x - max - log(sum(exp(x - max))) along one axis";
}

def Graph_LayerNormOp : Graph_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Layer normalization over the dimensions from `axis` on";
  let description = [{
    Normalizes over dimensions `axis`..rank-1 (ONNX LayerNormalization;
    torch's `normalized_shape` is those trailing dimensions), with biased
    variance, then scales by `weight` and adds `bias` when given. Both have
    the shape of the normalized dimensions.

    ```mlir
    %y = graph.layer_norm %x weight(%w : tensor<768xf32>) bias(%b : tensor<768xf32>)
        axis 1 eps 1.0e-05 : tensor<16x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$weight,
                       Optional<Graph_FloatTensor>:$bias,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? `axis` $axis `eps` $epsilon
    attr-dict `:` type($input)
  }];
}

def Graph_RmsNormOp : Graph_Op<"rms_norm", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "x / sqrt(mean(x^2) + epsilon) * weight over the dims from `axis` on";
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$weight,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)? `axis` $axis
    `eps` $epsilon attr-dict `:` type($input)
  }];
}

def Graph_BatchNormOp : Graph_Op<"batch_norm",
    [Pure, InferTypeOpAdaptor, AllTypesMatch<["scale", "bias", "mean", "variance"]>,
     Graph_SymbolicSizes]> {
  let summary = "Inference-form batch normalization along the channel `axis`";
  let description = [{
    `(x - mean) / sqrt(variance + epsilon) * scale + bias`, with the 1-D
    parameters broadcast along dimension `axis` (1 for NCHW, -1 for NHWC).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, Graph_FloatTensor:$mean,
                       Graph_FloatTensor:$variance,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance `axis` $axis `eps` $epsilon
    attr-dict `:` type($input) `,` type($scale)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
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

def Graph_LinearOp : Graph_Op<"linear", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "x · weightᵀ + bias (torch.nn.functional.linear)";
  let description = [{
    `input` is `[..., K]`, `weight` is `[N, K]`, the optional `bias` is
    `[N]`; the result is `[..., N]`.
  }];
  let arguments = (ins Graph_NumericTensor:$input, Graph_NumericTensor:$weight,
                       Optional<Graph_NumericTensor>:$bias);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_ImageLayout : I32EnumAttr<"ImageLayout", "image tensor layout", [
    I32EnumAttrCase<"nchw", 0>, I32EnumAttrCase<"nhwc", 1>
  ]> {
  let cppNamespace = "::tessel::graph";
}

def Graph_Conv2DOp : Graph_Op<"conv2d", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "2-D convolution (cross-correlation) with groups";
  let description = [{
    With layout `nchw` the input is `[N, C, H, W]` and the weight
    `[F, C / groups, KH, KW]` (torch); with `nhwc` the input is
    `[N, H, W, C]` and the weight `[KH, KW, C / groups, F]` (HWIO). `padding`
    is `[top, left, bottom, right]` of zeros; the optional `bias` is `[F]`.

    ```mlir
    %y = graph.conv2d nchw %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1
        : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Graph_ImageLayout:$layout, Graph_NumericTensor:$input,
                       Graph_NumericTensor:$weight,
                       Optional<Graph_NumericTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $layout $input `,` $weight (`,` $bias^)? `strides` $strides `padding` $padding
    `dilations` $dilations `groups` $groups attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_PoolKind : I32EnumAttr<"PoolKind", "how a pooling window combines", [
    I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"avg", 1>
  ]> {
  let cppNamespace = "::tessel::graph";
}

def Graph_Pool2DOp : Graph_Op<"pool2d", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "2-D max or average pooling";
  let description = [{
    Windows of `kernel` cells every `strides`, over an input padded by
    `padding` (`[top, left, bottom, right]`; -inf for max, excluded or counted
    as zeros for avg depending on `count_include_pad`, as in torch).

    ```mlir
    %y = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0]
        : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Graph_PoolKind:$kind, Graph_ImageLayout:$layout,
                       Graph_NumericTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       UnitAttr:$count_include_pad);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = [{
    $kind $layout $input `kernel` $kernel `strides` $strides `padding` $padding
    (`count_include_pad` $count_include_pad^)? attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input $perm attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_SymbolicSizes]> {
  let summary = "Same elements in row-major order, new shape";
  let description = [{
    The result's shape is given. With size symbols (#graph.shape), both
    element counts must be the same product of the same symbolic factors:
    [batch, seq, 256] into [batch, seq, 4, 64] or [batch * seq, 256].
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_BroadcastToOp : Graph_Op<"broadcast_to", [Pure, Graph_SymbolicSizes]> {
  let summary = "Broadcasts to the result shape with numpy rules";
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Joins tensors along `axis`";
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` functional-type($inputs, $result)
  }];
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "Strided slice: per dimension, start:limit:step with step >= 1";
  let description = [{
    One entry per dimension, all within bounds (front ends resolve negative
    and out-of-range Python indices first). Dimension i of the result has
    ceil((limit - start) / step) elements. A dim whose size is a size
    symbol is taken whole: 0, INT64_MAX (to the end), 1.
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $starts `:` $limits `:` $steps `]` attr-dict `:` type($input) `->` type($result)
  }];
}

def Graph_GatherOp : Graph_Op<"gather", [Pure, InferTypeOpAdaptor, Graph_SymbolicSizes]> {
  let summary = "numpy.take along `axis` (embedding lookup)";
  let description = [{
    The result is `input.shape[:axis] + indices.shape + input.shape[axis+1:]`.
    Negative indices count from the end; indices out of range are clamped,
    since a kernel cannot raise.
  }];
  let arguments = (ins Graph_Tensor:$input, RankedTensorOf<[I32, I64]>:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` $axis attr-dict `:` functional-type(operands, results)
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

def Graph_FusedOp : Graph_Op<"fused", [IsolatedFromAbove, RecursiveMemoryEffects,
                                       Graph_SymbolicSizes]> {
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
    [Pure, Terminator, ReturnLike, HasParent<"FusedOp">, Graph_SymbolicSizes]> {
  let summary = "Returns the results of a fusion group";
  let arguments = (ins Variadic<Graph_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TESSEL_GRAPH_OPS
