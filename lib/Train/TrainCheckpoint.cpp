//===- TrainCheckpoint.cpp - checkpoints of a training run ----------------===//

#include "dice/Train/TrainCheckpoint.h"
#include "dice/Model/Safetensors.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace dice {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

const char *const kCopiedFiles[] = {
    "generation_config.json", "vocab.json", "merges.txt", "tokenizer.json",
    "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json",
    "chat_template.jinja"};

Status writeText(const fs::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    return Error(path.string(), "cannot be written");
  return {};
}

ModelDType dtypeOf(const torch::Tensor &t) {
  switch (t.scalar_type()) {
  case torch::kFloat16:
    return ModelDType::Float16;
  case torch::kBFloat16:
    return ModelDType::BFloat16;
  default:
    return ModelDType::Float32;
  }
}

/// Writes `tensors` into safetensors files of at most `shardBytes` each
/// (`stem.safetensors`, or `stem-0000k-of-0000n.safetensors` and an index
/// when there are several).
Status writeShards(const fs::path &dir, const std::string &stem,
                   const NamedTensors &tensors, size_t shardBytes) {
  std::vector<NamedTensors> shards(1);
  size_t bytes = 0;
  for (const auto &[name, t] : tensors) {
    size_t n = size_t(t.nbytes());
    if (!shards.back().empty() && bytes + n > shardBytes) {
      shards.emplace_back();
      bytes = 0;
    }
    torch::Tensor host = t.detach().cpu().contiguous();
    if (host.scalar_type() != torch::kFloat16 &&
        host.scalar_type() != torch::kBFloat16)
      host = host.to(torch::kFloat32);
    shards.back().emplace_back(name, host);
    bytes += n;
  }
  json weightMap = json::object();
  size_t total = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    std::string file = stem + ".safetensors";
    if (shards.size() > 1) {
      std::ostringstream name;
      name << stem << "-" << std::setw(5) << std::setfill('0') << k + 1 << "-of-"
           << std::setw(5) << shards.size() << ".safetensors";
      file = name.str();
    }
    std::vector<TensorToWrite> writes;
    for (const auto &[name, t] : shards[k]) {
      writes.push_back({name, dtypeOf(t),
                        std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                        t.data_ptr(), size_t(t.nbytes())});
      weightMap[name] = file;
      total += size_t(t.nbytes());
    }
    if (Status ok = writeSafetensors((dir / file).string(), writes); !ok)
      return ok;
  }
  if (shards.size() > 1) {
    json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}};
    return writeText(dir / (stem + ".safetensors.index.json"), index.dump(2) + "\n");
  }
  return {};
}

/// Gives the finished folder `tmp` the name `final`. A resume from an earlier
/// checkpoint writes later names again: the old folder is swapped out in one
/// step, so that `final`, whenever a killed run leaves it, is one whole
/// checkpoint, never a folder half deleted.
Status putInPlace(const fs::path &tmp, const fs::path &final) {
  std::error_code ec;
  if (!fs::exists(final, ec)) {
    fs::rename(tmp, final, ec);
    if (ec)
      return Error(final.string(), "cannot be put in place: " + ec.message());
    return {};
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(),
                  RENAME_EXCHANGE) == 0)
    return removeTree(tmp.string()); // the old checkpoint now
  if (errno != EINVAL && errno != ENOSYS)
    return Error(final.string(),
                 std::string("cannot be replaced: ") + std::strerror(errno));
  // A file system without the exchange: the old folder is moved aside first,
  // and until the rename below a resume takes the checkpoint before it.
  fs::path old = final.string() + ".old";
  fs::rename(final, old, ec);
  if (!ec)
    fs::rename(tmp, final, ec);
  if (ec)
    return Error(final.string(), "cannot be put in place: " + ec.message());
  return removeTree(old.string());
}

} // namespace

Status writeCheckpoint(const std::string &dir, const std::string &modelDir,
                       const CheckpointContents &c, double shardMb) {
  fs::path final(dir), tmp(dir + ".partial");
  std::error_code ec;
  // What a killed writer left: never loaded (latestCheckpoint skips names
  // with a dot), removed here. Not with fs::remove_all: the one this
  // binary reaches is libtorch.so's, which crashes on a folder with files.
  for (const fs::path &stale : {tmp, fs::path(dir + ".old")})
    if (Status removed = removeTree(stale.string()); !removed)
      return removed;
  fs::create_directories(tmp, ec);
  if (ec)
    return Error(tmp.string(), "cannot be created: " + ec.message());

  // config.json as the source wrote it, with the dtype of the files.
  Result<std::string> configText = readFile((fs::path(modelDir) / "config.json").string());
  if (!configText)
    return configText.error();
  json config = json::parse(*configText, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    return Error((fs::path(modelDir) / "config.json").string(), "is not a JSON object");
  if (!c.model.empty()) {
    torch::ScalarType t = c.model.front().second.scalar_type();
    config["torch_dtype"] = t == torch::kBFloat16 ? "bfloat16"
                            : t == torch::kFloat16 ? "float16"
                                                   : "float32";
  }
  if (Status ok = writeText(tmp / "config.json", config.dump(2) + "\n"); !ok)
    return ok;
  for (const char *name : kCopiedFiles) {
    fs::path from = fs::path(modelDir) / name;
    if (fs::exists(from)) {
      fs::copy_file(from, tmp / name, fs::copy_options::overwrite_existing, ec);
      if (ec)
        return Error(from.string(), "cannot be copied: " + ec.message());
    }
  }
  size_t shardBytes = size_t(shardMb * 1024 * 1024);
  if (Status ok = writeShards(tmp, "model", c.model, shardBytes); !ok)
    return ok;
  // What only a resume needs stays out of the model folder's own files.
  fs::path trainer = tmp / kTrainerDir;
  fs::create_directories(trainer, ec);
  if (!c.optimizer.empty())
    if (Status ok = writeShards(trainer, "optimizer", c.optimizer, SIZE_MAX); !ok)
      return ok;
  if (!c.adapters.empty()) {
    fs::create_directories(tmp / kAdapterDir, ec);
    if (ec)
      return Error((tmp / kAdapterDir).string(), "cannot be created: " + ec.message());
    if (Status ok = writeAdapter((tmp / kAdapterDir).string(), c.adapterSettings,
                                 modelDir, c.adapters);
        !ok)
      return ok;
  }
  json state = {{"step", c.state.step},
                {"stage", c.state.stage},
                {"data_position", c.state.dataPosition},
                {"seed", c.state.seed},
                {"world_size", c.state.worldSize},
                {"lora", c.state.lora}};
  if (Status ok = writeText(trainer / "trainer_state.json", state.dump(2) + "\n"); !ok)
    return ok;

  return putInPlace(tmp, final);
}

Result<TrainState> readTrainState(const std::string &dir) {
  std::string path = (fs::path(dir) / kTrainerDir / "trainer_state.json").string();
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error(path, "is not a JSON object");
  TrainState s;
  try {
    s.step = j.at("step").get<int64_t>();
    s.stage = j.at("stage").get<std::string>();
    s.dataPosition = j.at("data_position").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
    s.worldSize = j.value("world_size", 1);
    s.lora = j.value("lora", false);
  } catch (const std::exception &e) {
    return Error(path, std::string("is not a trainer state: ") + e.what());
  }
  return s;
}

std::string latestCheckpoint(const std::string &root) {
  std::string best;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("step-", 0) == 0 &&
        name.find('.') == std::string::npos &&
        fs::exists(entry.path() / kTrainerDir / "trainer_state.json") && name > best)
      best = name;
  }
  return best.empty() ? "" : (fs::path(root) / best).string();
}

} // namespace dice
