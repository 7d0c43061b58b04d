//===- HostCode.cpp - machine code for this CPU, and its linker -----------===//
//
// Replaces MLIR's ExecutionEngine for CPU executables so that machine code
// can outlive the process (the compile cache stores the objects) and be
// generated on every core: the translated module is split with LLVM's
// SplitModule, as LTO's parallel code generation does, and each part is
// optimised and compiled in an LLVMContext and TargetMachine of its own.
//
//===----------------------------------------------------------------------===//

#include "python/capi/HostCode.h"

#include "mlir-c/RegisterEverything.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

void report(MlirStringCallback callback, void *userData,
            const std::string &text) {
  callback(mlirStringRefCreate(text.data(), text.size()), userData);
}

/// This machine's CPU, with the code and relocation models that ORC's JIT
/// linker takes on x86-64 and AArch64 ELF: objects made for it link into
/// any later process on the same machine.
llvm::Expected<llvm::orc::JITTargetMachineBuilder>
hostMachineBuilder(unsigned optLevel) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeModel(llvm::CodeModel::Small);
  static constexpr llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
      llvm::CodeGenOptLevel::Default, llvm::CodeGenOptLevel::Aggressive};
  builder->setCodeGenOptLevel(levels[std::min(optLevel, 3u)]);
  return builder;
}

/// Optimises `module` and compiles it to an object in `object`.
llvm::Error compile(llvm::Module &module, unsigned optLevel,
                    llvm::SmallString<0> &object) {
  auto builder = hostMachineBuilder(optLevel);
  if (!builder)
    return builder.takeError();
  auto machine = builder->createTargetMachine();
  if (!machine)
    return machine.takeError();
  module.setDataLayout((*machine)->createDataLayout());
  module.setTargetTriple((*machine)->getTargetTriple());
  if (llvm::Error error =
          mlir::makeOptimizingTransformer(optLevel, 0, machine->get())(&module))
    return error;
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager passes;
  if ((*machine)->addPassesToEmitFile(passes, stream, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("this CPU's target cannot emit objects");
  passes.run(module);
  return llvm::Error::success();
}

bool definesAnything(const llvm::Module &module) {
  for (const llvm::GlobalValue &value : module.global_values())
    if (!value.isDeclaration())
      return true;
  return false;
}

} // namespace

struct TesselObjectJIT {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

bool tesselEmitHostObjects(MlirModule module, unsigned optLevel,
                           unsigned partitions, MlirStringCallback object,
                           MlirStringCallback error, void *userData) {
  mlirRegisterAllLLVMTranslations(mlirModuleGetContext(module));
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> whole =
      mlir::translateModuleToLLVMIR(unwrap(module), context);
  if (!whole) {
    report(error, userData, "the module cannot be translated to LLVM IR");
    return false;
  }
  std::vector<llvm::SmallString<0>> objects;
  if (partitions <= 1) {
    objects.emplace_back();
    if (llvm::Error e = compile(*whole, optLevel, objects.back())) {
      report(error, userData, llvm::toString(std::move(e)));
      return false;
    }
  } else {
    // Parts travel as bitcode: each thread needs a context of its own.
    std::vector<llvm::SmallString<0>> parts;
    llvm::SplitModule(
        *whole, partitions,
        [&](std::unique_ptr<llvm::Module> part) {
          if (!definesAnything(*part))
            return;
          llvm::raw_svector_ostream stream(parts.emplace_back());
          llvm::WriteBitcodeToFile(*part, stream);
        },
        /*PreserveLocals=*/true);
    objects.resize(parts.size());
    std::vector<std::string> errors(parts.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < parts.size(); ++i)
      threads.emplace_back([&, i] {
        llvm::LLVMContext partContext;
        auto part = llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(parts[i].str(), "part"), partContext);
        llvm::Error e = part ? compile(**part, optLevel, objects[i])
                             : part.takeError();
        if (e)
          errors[i] = llvm::toString(std::move(e));
      });
    for (std::thread &thread : threads)
      thread.join();
    for (const std::string &e : errors)
      if (!e.empty()) {
        report(error, userData, e);
        return false;
      }
  }
  for (const llvm::SmallString<0> &o : objects)
    object(mlirStringRefCreate(o.data(), o.size()), userData);
  return true;
}

TesselObjectJIT *tesselObjectJITCreate(const MlirStringRef *objects,
                                       intptr_t objectCount,
                                       const MlirStringRef *symbolNames,
                                       const uint64_t *symbolAddresses,
                                       intptr_t symbolCount,
                                       MlirStringCallback error,
                                       void *userData) {
  auto fail = [&](llvm::Error e) -> TesselObjectJIT * {
    report(error, userData, llvm::toString(std::move(e)));
    return nullptr;
  };
  auto builder = hostMachineBuilder(2);
  if (!builder)
    return fail(builder.takeError());
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*builder).create();
  if (!jit)
    return fail(jit.takeError());
  llvm::orc::JITDylib &library = (*jit)->getMainJITDylib();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return fail(process.takeError());
  library.addGenerator(std::move(*process));
  llvm::orc::SymbolMap symbols;
  for (intptr_t i = 0; i < symbolCount; ++i)
    symbols[(*jit)->mangleAndIntern(unwrap(symbolNames[i]))] = {
        llvm::orc::ExecutorAddr(symbolAddresses[i]),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  if (llvm::Error e = library.define(llvm::orc::absoluteSymbols(symbols)))
    return fail(std::move(e));
  for (intptr_t i = 0; i < objectCount; ++i)
    if (llvm::Error e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
            unwrap(objects[i]), "tessel-object-" + std::to_string(i))))
      return fail(std::move(e));
  if (llvm::Error e = (*jit)->initialize(library))
    return fail(std::move(e));
  return new TesselObjectJIT{std::move(*jit)};
}

uint64_t tesselObjectJITLookup(TesselObjectJIT *jit, MlirStringRef name,
                               MlirStringCallback error, void *userData) {
  auto address = jit->jit->lookup(unwrap(name));
  if (!address) {
    report(error, userData, llvm::toString(address.takeError()));
    return 0;
  }
  return address->getValue();
}

void tesselObjectJITDestroy(TesselObjectJIT *jit) { delete jit; }
