//===- TrainSession.cpp - what every stage of a run shares ----------------===//

#include "dice/Train/TrainSession.h"

#include "dice/Model/Safetensors.h"
#include "dice/Train/Trainer.h"

#include <ATen/autocast_mode.h>
#if __has_include(<c10/cuda/CUDAFunctions.h>)
#include <c10/cuda/CUDAFunctions.h>
#define DICE_TRAIN_HAVE_CUDA 1
#else
#define DICE_TRAIN_HAVE_CUDA 0
#endif

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace dice {
namespace fs = std::filesystem;

AutocastScope::AutocastScope(bool on)
    : on(on), was(at::autocast::is_autocast_enabled(at::kCUDA)) {
  if (on) {
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
  }
}

AutocastScope::~AutocastScope() {
  if (on) {
    at::autocast::set_autocast_enabled(at::kCUDA, was);
    at::autocast::clear_cache();
  }
}

bool TrainSession::autocast() const {
  return config.precision == "bf16" && device.is_cuda();
}

void TrainSession::say(const std::string &text) const {
  if (dist && !dist->isMain())
    return;
  if (metrics)
    const_cast<MetricsLog &>(*metrics).finish();
  std::fprintf(stderr, "dice-train: %s\n", text.c_str());
}

Status TrainSession::open() {
  // The device first: under torchrun each rank takes its local GPU.
  bool cuda = config.device == "cuda" ||
              (config.device == "auto" && torch::cuda::is_available());
  if (cuda && !torch::cuda::is_available())
    return Error("", 0, 0, "run.device", "\"cuda\" but no CUDA device is visible");
  Result<std::unique_ptr<Distributed>> d =
      Distributed::fromEnvironment(cuda ? torch::Device(torch::kCUDA) : torch::kCPU);
  if (!d)
    return d.error();
  dist = d.take();
  device = cuda ? torch::Device(torch::kCUDA, int8_t(dist->localRank()))
                : torch::Device(torch::kCPU);
#if DICE_TRAIN_HAVE_CUDA
  if (cuda)
    c10::cuda::set_device(c10::DeviceIndex(dist->localRank()));
#endif
  if (config.precision == "bf16" && !cuda)
    say("precision \"bf16\" needs a GPU: this CPU run trains in fp32");

  if (config.modelPath.empty())
    return Error("", 0, 0, "model.path", "is not set");
  Result<Tokenizer> tok = Tokenizer::load(config.modelPath);
  if (!tok)
    return tok.error();
  tokenizer = tok.take();

  // Resume: full fine-tuning reloads the checkpoint's own weights; LoRA the
  // base and then its adapters.
  std::string resumeDir = config.resume;
  if (resumeDir == "latest")
    resumeDir = latestCheckpoint(config.checkpointDir);
  std::optional<TrainState> state;
  if (!resumeDir.empty()) {
    Result<TrainState> s = readTrainState(resumeDir);
    if (!s)
      return s.error();
    if (s->stage != toString(config.stage))
      say("resuming a " + s->stage + " checkpoint for " +
          std::string(toString(config.stage)) + ": its weights, a fresh optimizer");
    state = *s;
  }
  LoraOptions lora{config.loraRank, config.loraAlpha, config.loraTargets,
                   config.loraTrainMaskRow};
  bool sameStage = state && state->stage == toString(config.stage);
  std::string weightsDir =
      state && !(lora.rank > 0 && state->lora) ? resumeDir : config.modelPath;
  try {
    if (config.randomInit && !state) {
      Result<ModelConfig> mc = loadModelConfig(config.modelPath);
      if (!mc)
        return mc.error();
      model = PolicyModel::random(*mc, device, lora, config.seed);
    } else {
      Result<PolicyModel> m = PolicyModel::load(weightsDir, device, lora);
      if (!m)
        return m.error();
      model = m.take();
    }
    model->setGradientCheckpointing(config.gradientCheckpointing);
    if (state && lora.rank > 0 && state->lora) {
      std::string path = (fs::path(resumeDir) / kAdapterDir / kAdapterWeightsFile).string();
      auto adapters = readTensorFile(path);
      if (!adapters)
        return adapters.error();
      if (Status ok = model->restore(*adapters); !ok) {
        Error e = ok.error();
        e.file = path;
        return e;
      }
    }
    optimizer = std::make_unique<AdamW>(model->trainable(), config, *dist);
    if (sameStage) {
      std::string path = (fs::path(resumeDir) / kTrainerDir / "optimizer.safetensors").string();
      auto moments = readTensorFile(path);
      if (!moments)
        return moments.error();
      if (Status ok = optimizer->loadState(*moments, state->step); !ok) {
        Error e = ok.error();
        e.file = path;
        return e;
      }
      step = state->step;
      dataPosition = state->dataPosition;
      say("resumed " + resumeDir + " at step " + std::to_string(step));
    }
  } catch (const std::exception &e) {
    return Error(std::string("cannot set up the model: ") + e.what());
  }

  std::string metricsPath = config.metricsPath.empty()
                                ? (fs::path(config.checkpointDir) / "metrics.jsonl").string()
                                : config.metricsPath;
  if (dist->isMain()) {
    // Steps a killed run logged after this checkpoint are taken again.
    if (sameStage)
      if (Status ok = dropLoggedStepsAfter(
              metricsPath, std::string(toString(config.stage)), step);
          !ok)
        return ok;
    Result<MetricsLog> log = MetricsLog::open(metricsPath, config.status);
    if (!log)
      return log.error();
    metrics = log.take();
  }
  return {};
}

double TrainSession::update(double lr) {
  std::vector<torch::Tensor> grads;
  for (auto &[name, p] : optimizer->parameters()) {
    if (!p.grad().defined())
      const_cast<torch::Tensor &>(p).mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  dist->allReduceSum(grads, size_t(config.bucketMb * 1024 * 1024));
  double norm = optimizer->clipGradNorm(config.gradClip);
  optimizer->step(lr);
  optimizer->zeroGrad();
  return norm;
}

Status TrainSession::saveCheckpoint() {
  std::ostringstream name;
  name << "step-" << std::setw(6) << std::setfill('0') << step;
  std::string dir = (fs::path(config.checkpointDir) / name.str()).string();
  CheckpointContents c;
  for (auto &[n, t] : optimizer->stateForCheckpoint()) // collective
    c.optimizer.emplace_back(n, t);
  if (!dist->isMain()) {
    dist->barrier();
    return {};
  }
  c.model = model->checkpointTensors(model->usesLora() ? toScalarType(model->config().torchDtype)
                                                       : torch::kFloat32);
  c.adapters = model->adapterTensors();
  c.adapterSettings = model->adapterSettings();
  c.state = {step, std::string(toString(config.stage)), dataPosition, config.seed,
             dist->worldSize(), model->usesLora()};
  Status ok = writeCheckpoint(dir, config.modelPath, c, config.shardMb);
  dist->barrier();
  if (ok)
    say("wrote " + dir);
  return ok;
}

Status runTraining(const TrainConfig &config) {
  bool rl = config.stage == TrainStage::RlInfill ||
            config.stage == TrainStage::RlEndToEnd;
  if (rl && config.speedReward > 0 && config.overlapVerification)
    // Overlapped, the verifier times the kernels while the model generates
    // the next step's rollouts on the same GPU: the speedups a speed reward
    // would pay for are not the kernels'.
    return Error("", 0, 0, "rl.speed_reward",
                 "rewards speedups, which rl.overlap_verification = true "
                 "measures while the next rollouts are generated on the same "
                 "GPU; set rl.overlap_verification = false to use it");
  try {
    TrainSession session(config);
    if (Status ok = session.open(); !ok)
      return ok;
    Status ran = config.stage == TrainStage::Sft ? runSft(session)
                 : config.stage == TrainStage::EvalInfill ||
                         config.stage == TrainStage::EvalEndToEnd
                     ? runEvaluation(session)
                     : runRl(session);
    if (session.metrics)
      session.metrics->finish();
    return ran;
  } catch (const std::exception &e) {
    return Error(std::string("training failed: ") + e.what());
  }
}

} // namespace dice
