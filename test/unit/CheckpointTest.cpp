//===- CheckpointTest.cpp - config.json and safetensors loading -----------===//
//
// Every way a checkpoint can be wrong gives an error value naming the file
// and the tensor (or key), never an exception or a read past the end.
//
// Files are handled with POSIX calls: libtorch.so exports std::filesystem
// symbols of its own that crash when a test binary resolves to them.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Safetensors.h"
#include "dice/Model/Transformer.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

using namespace dice;

namespace {

/// Removes a flat directory and its files.
void removeDir(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

size_t fileSize(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? size_t(st.st_size) : 0;
}

constexpr const char *tinyConfig = R"({
  "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
  "rope_theta": 1000000, "rms_norm_eps": 1e-6, "vocab_size": 16,
  "block_size": 4, "mask_token_id": 15, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "eos_token_id": 13
})";

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp ? tmp : "/tmp") + "/dice-checkpoint-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir = pattern;
    write("config.json", tinyConfig);
    Result<ModelConfig> parsed = parseModelConfig(tinyConfig, "config.json");
    ASSERT_TRUE(parsed) << parsed.error().format();
    config = *parsed;
    for (auto &[name, shape] : checkpointTensorShapes(config))
      tensors.push_back({name, shape});
  }
  void TearDown() override { removeDir(dir); }

  void write(const std::string &name, const std::string &text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
  }

  /// Writes `tensors` (fp32, value = index) to one file in `dir`.
  std::string writeTensors(const std::string &file,
                           const std::vector<std::pair<std::string, std::vector<int64_t>>> &which) {
    std::vector<std::vector<float>> storage;
    std::vector<TensorToWrite> out;
    for (auto &[name, shape] : which) {
      int64_t numel = 1;
      for (int64_t d : shape)
        numel *= d;
      storage.emplace_back(size_t(numel), float(storage.size()) * 0.01f);
    }
    for (size_t k = 0; k < which.size(); ++k)
      out.push_back({which[k].first, ModelDType::Float32, which[k].second,
                     storage[k].data(), storage[k].size() * sizeof(float)});
    std::string path = dir + "/" + file;
    EXPECT_TRUE(writeSafetensors(path, out));
    return path;
  }

  std::string load() {
    Result<std::unique_ptr<Transformer>> model =
        Transformer::load(dir, torch::kCPU, torch::kFloat32);
    return model ? "" : model.error().describe();
  }

  std::string dir;
  ModelConfig config;
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
};

TEST_F(CheckpointTest, ConfigHasEverySdarKey) {
  EXPECT_EQ(config.hiddenSize, 8);
  EXPECT_EQ(config.intermediateSize, 12);
  EXPECT_EQ(config.numHiddenLayers, 2);
  EXPECT_EQ(config.numAttentionHeads, 2);
  EXPECT_EQ(config.numKeyValueHeads, 1);
  EXPECT_EQ(config.headDim, 4);
  EXPECT_EQ(config.ropeTheta, 1e6);
  EXPECT_EQ(config.rmsNormEps, 1e-6);
  EXPECT_EQ(config.vocabSize, 16);
  EXPECT_EQ(config.blockSize, 4);
  EXPECT_EQ(config.maskTokenId, 15);
  EXPECT_FALSE(config.tieWordEmbeddings);
  EXPECT_EQ(config.torchDtype, ModelDType::BFloat16);
  EXPECT_EQ(config.stopTokenIds, std::vector<int64_t>{13});
}

TEST(ComputeDType, AutoIsTheCheckpointsOnAGpuAndFloat32OnTheCpu) {
  EXPECT_EQ(*computeDType("auto", /*onCpu=*/true, ModelDType::BFloat16),
            ModelDType::Float32);
  EXPECT_EQ(*computeDType("", /*onCpu=*/true, ModelDType::Float16), ModelDType::Float32);
  EXPECT_EQ(*computeDType("auto", /*onCpu=*/false, ModelDType::BFloat16),
            ModelDType::BFloat16);
  EXPECT_EQ(*computeDType("auto", /*onCpu=*/false, ModelDType::Float16),
            ModelDType::Float16);
  // A named dtype wins on either device.
  EXPECT_EQ(*computeDType("bfloat16", /*onCpu=*/true, ModelDType::Float32),
            ModelDType::BFloat16);
  EXPECT_EQ(*computeDType("float32", /*onCpu=*/false, ModelDType::BFloat16),
            ModelDType::Float32);
  Result<ModelDType> bad = computeDType("fp8", true, ModelDType::BFloat16);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown dtype 'fp8'"), std::string::npos);
}

TEST_F(CheckpointTest, GenerationConfigGivesStopIds) {
  write("generation_config.json", R"({"eos_token_id": [151645, 151643]})");
  Result<ModelConfig> loaded = loadModelConfig(dir);
  ASSERT_TRUE(loaded) << loaded.error().format();
  EXPECT_EQ(loaded->stopTokenIds, (std::vector<int64_t>{151645, 151643}));
}

TEST_F(CheckpointTest, GenerationConfigRecommendsDecoding) {
  // SDAR's own generation_config.json.
  write("generation_config.json",
        R"({"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
            "eos_token_id": [151645, 151643]})");
  Result<ModelConfig> loaded = loadModelConfig(dir);
  ASSERT_TRUE(loaded) << loaded.error().format();
  SamplingConfig defaults;
  ASSERT_TRUE(defaults.deterministic()) << "dice's own default is greedy";
  SamplingConfig s = applyGenerationDefaults(defaults, loaded->generation);
  EXPECT_EQ(s.temperature, 0.6);
  EXPECT_EQ(s.topK, 20);
  EXPECT_EQ(s.topP, 0.95);
  EXPECT_FALSE(s.deterministic());

  // What the user set stands, key by key.
  Result<Config> user = parseConfig("[sampling]\ntop_k = 1\n", "dice.toml");
  ASSERT_TRUE(user);
  s = applyGenerationDefaults(user->sampling, loaded->generation);
  EXPECT_EQ(s.topK, 1);
  EXPECT_EQ(s.temperature, 0.6);
  EXPECT_TRUE(s.deterministic());
  ASSERT_TRUE(applyConfigOverride(*user, "sampling.temperature", "0.0"));
  EXPECT_EQ(applyGenerationDefaults(user->sampling, loaded->generation).temperature, 0.0);
}

TEST_F(CheckpointTest, GenerationConfigSamplingDefaultsAreTransformers) {
  GenerationDefaults sample;
  sample.doSample = true;
  SamplingConfig s = applyGenerationDefaults(SamplingConfig{}, sample);
  EXPECT_EQ(s.temperature, 1.0);
  EXPECT_EQ(s.topK, 50);
  EXPECT_EQ(s.topP, 1.0);

  // do_sample false or absent: the file's numbers are not used.
  GenerationDefaults greedy;
  greedy.doSample = false;
  greedy.temperature = 0.5;
  greedy.topK = 7;
  EXPECT_TRUE(applyGenerationDefaults(SamplingConfig{}, greedy).deterministic());
  greedy.doSample.reset();
  EXPECT_EQ(applyGenerationDefaults(SamplingConfig{}, greedy).topK, 1);
}

TEST_F(CheckpointTest, GenerationConfigBoundsTheAnswerUnlessTheUserDoes) {
  // max_new_tokens holds with or without do_sample, as in transformers.
  write("generation_config.json", R"({"max_new_tokens": 1280})");
  Result<ModelConfig> loaded = loadModelConfig(dir);
  ASSERT_TRUE(loaded) << loaded.error().format();
  SamplingConfig s = applyGenerationDefaults(SamplingConfig{}, loaded->generation);
  EXPECT_EQ(s.maxTokens, 1280);
  EXPECT_TRUE(s.deterministic());
  // A user's max_tokens stands, even one equal to dice's default.
  Result<Config> user = parseConfig("[sampling]\nmax_tokens = 4096\n", "dice.toml");
  ASSERT_TRUE(user);
  EXPECT_EQ(applyGenerationDefaults(user->sampling, loaded->generation).maxTokens, 4096);
  ASSERT_TRUE(applyConfigOverride(*user, "sampling.max_tokens", "64"));
  EXPECT_EQ(applyGenerationDefaults(user->sampling, loaded->generation).maxTokens, 64);
  // Without the key, dice's default.
  EXPECT_EQ(applyGenerationDefaults(SamplingConfig{}, GenerationDefaults{}).maxTokens,
            SamplingConfig{}.maxTokens);
}

TEST_F(CheckpointTest, GenerationConfigErrorsNameFileAndKey) {
  for (auto [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"do_sample": "yes"})", "do_sample"},
           {R"({"do_sample": true, "temperature": -1})", "temperature"},
           {R"({"top_k": 2.5})", "top_k"},
           {R"({"top_p": 0})", "top_p"},
           {R"({"top_p": 1.5})", "top_p"},
           {R"({"max_new_tokens": 0})", "max_new_tokens"},
           {R"({"max_new_tokens": 64.5})", "max_new_tokens"}}) {
    write("generation_config.json", text);
    Result<ModelConfig> loaded = loadModelConfig(dir);
    ASSERT_FALSE(loaded) << text;
    EXPECT_EQ(loaded.error().file, dir + "/generation_config.json");
    EXPECT_EQ(loaded.error().key, key) << text;
  }
}

TEST_F(CheckpointTest, ConfigErrorsNameFileAndKey) {
  Result<ModelConfig> missing =
      parseModelConfig(R"({"hidden_size": 8})", "x/config.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().file, "x/config.json");
  EXPECT_EQ(missing.error().key, "intermediate_size");
  EXPECT_EQ(missing.error().describe(),
            "x/config.json: intermediate_size: missing");
  Result<ModelConfig> broken =
      parseModelConfig("{\"hidden_size\": ", "x/config.json");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().file, "x/config.json");
  EXPECT_NE(broken.error().message.find("invalid JSON"), std::string::npos);
  // A number beyond double's range is nlohmann's out_of_range, not a
  // parse_error; it ended the process before (the fuzz targets found it).
  Result<ModelConfig> huge =
      parseModelConfig("{\"hidden_size\": 1e999}", "x/config.json");
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().file, "x/config.json");
  EXPECT_NE(huge.error().message.find("invalid JSON"), std::string::npos);
}

TEST_F(CheckpointTest, LoadsSingleFileAndShards) {
  writeTensors("model.safetensors", tensors);
  EXPECT_EQ(load(), "");

  ::unlink((dir + "/model.safetensors").c_str());
  std::vector<std::pair<std::string, std::vector<int64_t>>> first, second;
  std::string index = R"({"metadata": {}, "weight_map": {)";
  for (size_t k = 0; k < tensors.size(); ++k) {
    const char *file = k % 2 ? "b.safetensors" : "a.safetensors";
    (k % 2 ? second : first).push_back(tensors[k]);
    index += (k ? "," : "") + ("\"" + tensors[k].first + "\": \"" + file + "\"");
  }
  write("model.safetensors.index.json", index + "}}");
  writeTensors("a.safetensors", first);
  writeTensors("b.safetensors", second);
  EXPECT_EQ(load(), "");
}

TEST_F(CheckpointTest, MissingTensor) {
  tensors.erase(tensors.begin() + 5);
  std::string name = checkpointTensorShapes(config)[5].first;
  std::string path = writeTensors("model.safetensors", tensors);
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'" + name + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

TEST_F(CheckpointTest, ExtraTensor) {
  tensors.push_back({"model.layers.0.self_attn.rotary.inv_freq", {2}});
  std::string path = writeTensors("model.safetensors", tensors);
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'model.layers.0.self_attn.rotary.inv_freq'"), std::string::npos) << error;
  EXPECT_NE(error.find("extra"), std::string::npos) << error;
}

TEST_F(CheckpointTest, WrongShape) {
  for (auto &[name, shape] : tensors)
    if (name == "model.layers.1.self_attn.k_proj.weight")
      shape = {8, 8};
  std::string path = writeTensors("model.safetensors", tensors);
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'model.layers.1.self_attn.k_proj.weight'"), std::string::npos) << error;
  EXPECT_NE(error.find("[8, 8]"), std::string::npos) << error;
  EXPECT_NE(error.find("[4, 8]"), std::string::npos) << error;
}

TEST_F(CheckpointTest, TruncatedFile) {
  std::string path = writeTensors("model.safetensors", tensors);
  ASSERT_EQ(::truncate(path.c_str(), off_t(fileSize(path) - 6)), 0);
  std::string error = load();
  // The tensor written last is the one whose bytes are cut off.
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'" + tensors.back().first + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  ASSERT_EQ(::truncate(path.c_str(), 20), 0); // now even the header is cut
  error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("header length"), std::string::npos) << error;
}

TEST_F(CheckpointTest, CorruptHeader) {
  std::string path = writeTensors("model.safetensors", tensors);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // An entry whose offsets point past the data: names the tensor.
  std::string name = tensors.front().first;
  size_t at = bytes.find("\"" + name + "\"");
  ASSERT_NE(at, std::string::npos);
  size_t offsets = bytes.find("data_offsets", at);
  std::string corrupt = bytes;
  corrupt.replace(bytes.find('[', offsets) + 1, 1, "9");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << corrupt;
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'" + name + "'"), std::string::npos) << error;

  // A header that is not JSON at all.
  corrupt = bytes;
  corrupt[9] = '#';
  std::ofstream(path, std::ios::binary | std::ios::trunc) << corrupt;
  error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt header"), std::string::npos) << error;
}

TEST_F(CheckpointTest, UnsupportedDtypeNamesTensor) {
  std::string path = writeTensors("model.safetensors", tensors);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t at = bytes.find("\"F32\"");
  bytes.replace(at, 5, "\"I32\"");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("I32"), std::string::npos) << error;
  EXPECT_NE(error.find("tensor '"), std::string::npos) << error;
}

TEST_F(CheckpointTest, IndexNamingAbsentTensor) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> some(tensors.begin(), tensors.end() - 1);
  std::string index = R"({"weight_map": {)";
  for (size_t k = 0; k < tensors.size(); ++k)
    index += (k ? "," : "") + ("\"" + tensors[k].first + "\": \"a.safetensors\"");
  write("model.safetensors.index.json", index + "}}");
  std::string path = writeTensors("a.safetensors", some);
  std::string error = load();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("'" + tensors.back().first + "'"), std::string::npos) << error;
}

} // namespace
