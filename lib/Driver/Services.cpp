//===- Services.cpp - the standard services and their registration -------===//

#include "dice/Driver/Services.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "dice/Support/File.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dice;

MLIR_DEFINE_EXPLICIT_TYPE_ID(mlir::dice::DiceServices)

void DiceServices::progress(const Twine &) const {}

void DiceServices::recordResolved(llvm::json::Object) const {}

::dice::Result<::dice::Config>
DiceServices::loadConfig(const std::string &path) const {
  // Without a dialect these are the standard services every driverless
  // context shares for the whole process: nothing is kept.
  if (!getDialect())
    return ::dice::loadConfigFile(path);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = configs.find(path);
  if (found == configs.end())
    found = configs.emplace(path, ::dice::loadConfigFile(path)).first;
  return found->second;
}

::dice::Result<std::unique_ptr<::dice::InfillEngine>>
DiceServices::createInfillEngine(const ::dice::EngineSpec &spec) const {
  return ::dice::createInfillEngine(spec);
}

std::unique_ptr<::dice::CandidateVerifier>
DiceServices::createVerifier(const ::dice::CandidateVerifierOptions &options) const {
  return ::dice::createCandidateVerifier(options);
}

::dice::Result<std::unique_ptr<::dice::KernelStore>>
DiceServices::openKernelStore(const std::string &path) const {
  ::dice::Result<::dice::KernelDatabase> db =
      ::dice::KernelDatabase::open(path);
  if (!db)
    return db.error();
  return std::unique_ptr<::dice::KernelStore>(
      std::make_unique<::dice::KernelDatabase>(db.take()));
}

::dice::Result<std::shared_ptr<::dice::KernelStore>>
DiceServices::kernelStore(const std::string &path) const {
  std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
  if (getDialect()) {
    lock.lock();
    if (auto found = stores.find(path); found != stores.end())
      return found->second;
  }
  ::dice::Result<std::unique_ptr<::dice::KernelStore>> opened =
      openKernelStore(path);
  if (!opened)
    return opened.error();
  std::shared_ptr<::dice::KernelStore> store = opened.take();
  if (getDialect())
    stores[path] = store;
  return store;
}

llvm::Error DiceServices::writeArtifact(StringRef path, StringRef contents) const {
  if (path == "-") {
    llvm::outs() << contents;
    llvm::outs().flush();
    return llvm::Error::success();
  }
  // Through a temporary file and a rename: a concurrent reader sees the old
  // file or the new one, and a library a running process has mapped keeps
  // its inode.
  if (::dice::Status written = ::dice::writeFileAtomically(
          path.str(), {contents.data(), contents.size()});
      !written)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   written.error().describe().c_str());
  return llvm::Error::success();
}

::dice::ArtifactWriter DiceServices::artifactWriter() const {
  return [this](const std::string &path,
                std::string_view contents) -> ::dice::Status {
    if (llvm::Error failed =
            writeArtifact(path, StringRef(contents.data(), contents.size())))
      return ::dice::Error(llvm::toString(std::move(failed)));
    return {};
  };
}

const DiceServices &mlir::dice::getDiceServices(MLIRContext *context) {
  if (auto *dialect = context->getLoadedDialect<DiceDialect>())
    if (auto *services = dialect->getRegisteredInterface<DiceServices>())
      return *services;
  // Stateless: one for every context that has no driver's own.
  static const DiceServices standard(nullptr);
  return standard;
}

namespace {
/// Adds the driver's services to each context's dice dialect as it loads.
struct ServicesExtension
    : public DialectExtension<ServicesExtension, DiceDialect> {
  explicit ServicesExtension(
      std::function<std::unique_ptr<DiceServices>(Dialect *)> make)
      : make(std::move(make)) {}

  void apply(MLIRContext *, DiceDialect *dialect) const override {
    dialect->addInterface(make(dialect));
  }

  std::function<std::unique_ptr<DiceServices>(Dialect *)> make;
};
} // namespace

void mlir::dice::registerDiceServices(
    DialectRegistry &registry,
    std::function<std::unique_ptr<DiceServices>(Dialect *)> make) {
  registry.addExtension(TypeID::get<ServicesExtension>(),
                        std::make_unique<ServicesExtension>(std::move(make)));
}
