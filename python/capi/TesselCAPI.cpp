//===- TesselCAPI.cpp - C API of tessel's dialects and passes -------------===//

#include "python/capi/TesselCAPI.h"

#include "dialects/graph/Graph.h"
#include "dialects/loop/Loop.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "passes/loop/KnobTable.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Graph, graph,
                                      tessel::graph::GraphDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Loop, loop, tessel::loop::LoopDialect)

void tesselRegisterDialects(MlirDialectRegistry registry) {
  unwrap(registry)
      ->insert<tessel::graph::GraphDialect, tessel::loop::LoopDialect>();
}

void tesselTargetNames(MlirStringCallback callback, void *userData) {
  for (const std::string &name : tessel::loop::targetNames())
    callback(mlirStringRefCreate(name.data(), name.size()), userData);
}

void tesselTargetInstructions(MlirStringCallback callback, void *userData) {
  for (llvm::StringRef name : tessel::loop::instructionNames())
    callback(wrap(name), userData);
}

bool tesselTargetDescription(MlirStringRef name, MlirStringCallback callback,
                             void *userData) {
  const tessel::loop::TargetDescription *description =
      tessel::loop::lookupTarget(unwrap(name));
  if (!description)
    return false;
  std::string json;
  llvm::raw_string_ostream(json) << description->toJSON();
  callback(wrap(llvm::StringRef(json)), userData);
  return true;
}

bool tesselRegisterTarget(MlirStringRef text, MlirStringCallback callback,
                          void *userData) {
  std::string why;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(unwrap(text));
  if (!json) {
    why = llvm::toString(json.takeError());
  } else if (std::optional<tessel::loop::TargetDescription> description =
                 tessel::loop::TargetDescription::fromJSON(*json, why)) {
    why = tessel::loop::registerTarget(*description);
  }
  if (why.empty())
    return true;
  callback(wrap(llvm::StringRef(why)), userData);
  return false;
}

int64_t tesselVectorBitsOf(const MlirStringRef *features, intptr_t count,
                           MlirStringRef arch) {
  llvm::SmallVector<llvm::StringRef> names;
  for (intptr_t i = 0; i < count; ++i)
    names.push_back(unwrap(features[i]));
  return tessel::loop::vectorBitsOf(names, unwrap(arch));
}

bool tesselAttributeIsATarget(MlirAttribute attribute) {
  return llvm::isa<tessel::loop::TargetAttr>(unwrap(attribute));
}

MlirStringRef tesselTargetAttrGetName(MlirAttribute attribute) {
  return wrap(llvm::cast<tessel::loop::TargetAttr>(unwrap(attribute)).getName());
}

void tesselRegisterPasses(void) {
  // The pass registry is process-global and rejects a second registration.
  static std::once_flag once;
  std::call_once(once, [] {
    tessel::registerTesselPasses();
    tessel::registerTesselPipelines();
  });
}

/// Checks what MLIR's parser does not bound before it reads `text`:
/// nesting (it recurses once per bracket, region or type parameter list
/// with no limit: 20,000 nested `[` overflow the stack) and the alignment
/// word that opens each resource blob (0 aborts, 2^31 reserves 2 GiB). The
/// error is at the offending character; string literals and comments do
/// not count.
static mlir::LogicalResult checkBeforeParsing(mlir::MLIRContext *context,
                                              llvm::StringRef text,
                                              llvm::StringRef sourceName) {
  constexpr unsigned kMaxNesting = 256;
  constexpr uint32_t kMaxBlobAlignment = 4096;
  unsigned depth = 0, line = 1, column = 1;
  bool inMetadata = false; // in the `{-# ... #-}` resources section
  auto error = [&]() {
    return mlir::emitError(
        mlir::FileLineColLoc::get(context, sourceName, line, column));
  };
  for (size_t i = 0; i < text.size(); ++i, ++column) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      column = 0;
    } else if (c == '"') {
      llvm::StringRef literal = text.substr(i + 1);
      if (inMetadata && literal.starts_with("0x") && literal.size() >= 10) {
        // Four little-endian bytes of alignment, in hex.
        uint32_t alignment = 0;
        for (int b = 3; b >= 0; --b) {
          unsigned byte;
          if (literal.substr(2 + 2 * b, 2).getAsInteger(16, byte))
            break;
          alignment = alignment << 8 | byte;
        }
        if (!llvm::isPowerOf2_32(alignment) || alignment > kMaxBlobAlignment)
          return error() << "resource blob alignment " << alignment
                         << " is not a power of two of at most "
                         << kMaxBlobAlignment;
      }
      for (++i, ++column; i < text.size() && text[i] != '"'; ++i, ++column) {
        if (text[i] == '\\')
          ++i, ++column;
        else if (text[i] == '\n')
          ++line, column = 0;
      }
    } else if (c == '/' && text.substr(i).starts_with("//")) {
      i = std::min(text.find('\n', i), text.size()) - 1;
    } else if (c == '{' && text.substr(i).starts_with("{-#")) {
      inMetadata = true;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxNesting)
        return error() << "brackets nest deeper than " << kMaxNesting
                       << " levels; tessel does not parse such input";
    } else if ((c == ')' || c == ']' || c == '}' ||
                (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return mlir::success();
}

MlirModule tesselParseModule(MlirContext context, MlirStringRef source,
                             MlirStringRef sourceName) {
  if (mlir::failed(checkBeforeParsing(unwrap(context), unwrap(source),
                                      unwrap(sourceName))))
    return MlirModule{nullptr};
  mlir::ParserConfig config(unwrap(context));
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(unwrap(source), config,
                                              unwrap(sourceName));
  return wrap(module.release());
}

MlirModule tesselParseSchedule(MlirContext context, MlirStringRef source,
                               MlirStringRef sourceName) {
  mlir::MLIRContext *ctx = unwrap(context);
  if (mlir::failed(checkBeforeParsing(ctx, unwrap(source), unwrap(sourceName))))
    return MlirModule{nullptr};
  // Unverified: a module verifies its symbol uses, and the kernel the
  // schedule names is not in this one.
  mlir::ParserConfig config(ctx, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(unwrap(source), config,
                                              unwrap(sourceName));
  if (!module)
    return MlirModule{nullptr};
  mlir::Block &body = *module->getBody();
  if (body.getOperations().size() != 1 ||
      !llvm::isa<tessel::loop::ScheduleOp>(body.front())) {
    mlir::emitError(module->getLoc(), "the text is not one loop.schedule op");
    return MlirModule{nullptr};
  }
  if (mlir::failed(mlir::verify(&body.front())))
    return MlirModule{nullptr};
  return wrap(module.release());
}

void tesselKnobTable(MlirModule module, MlirStringCallback callback,
                     void *userData) {
  std::string json;
  llvm::raw_string_ostream(json)
      << llvm::json::Value(tessel::knobTable(unwrap(module)));
  callback(wrap(llvm::StringRef(json)), userData);
}
