//===- Optimizer.cpp - AdamW over named parameters, sharded ---------------===//

#include "dice/Train/Optimizer.h"

#include <algorithm>
#include <cmath>

namespace dice {

double learningRate(const TrainConfig &c, int64_t step) {
  if (c.warmupSteps > 0 && step < c.warmupSteps)
    return c.lr * double(step + 1) / double(c.warmupSteps);
  if (c.schedule == "constant")
    return c.lr;
  int64_t span = std::max<int64_t>(1, c.steps - c.warmupSteps - 1);
  double progress = std::min(1.0, double(step - c.warmupSteps) / double(span));
  double floor = c.lr * c.minLrRatio;
  return floor + (c.lr - floor) * 0.5 * (1 + std::cos(M_PI * progress));
}

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> parameters,
             const TrainConfig &config, Distributed &dist)
    : params(std::move(parameters)), cfg(config), dist(dist) {
  // Owners balance bytes: the largest parameters first, each to the rank
  // holding the fewest bytes so far.
  owner.assign(params.size(), 0);
  moments.resize(params.size());
  if (cfg.shardOptimizer && dist.worldSize() > 1) {
    std::vector<size_t> bySize(params.size());
    for (size_t i = 0; i < params.size(); ++i)
      bySize[i] = i;
    std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
      return params[a].second.numel() > params[b].second.numel();
    });
    std::vector<int64_t> load(size_t(dist.worldSize()), 0);
    for (size_t i : bySize) {
      int r = int(std::min_element(load.begin(), load.end()) - load.begin());
      owner[i] = r;
      load[size_t(r)] += params[i].second.numel();
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    bool mine = !cfg.shardOptimizer || owner[i] == dist.rank();
    if (!mine)
      continue;
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(
        params[i].second.device());
    moments[i].expAvg = torch::zeros(params[i].second.sizes(), f32);
    moments[i].expAvgSq = torch::zeros(params[i].second.sizes(), f32);
  }
}

void AdamW::zeroGrad() {
  for (auto &[name, p] : params)
    if (p.grad().defined())
      p.mutable_grad().zero_();
}

double AdamW::clipGradNorm(double maxNorm) {
  torch::NoGradGuard noGrad;
  double total = 0;
  for (auto &[name, p] : params)
    if (p.grad().defined())
      total += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  double norm = std::sqrt(total);
  if (maxNorm > 0 && norm > maxNorm) {
    double scale = maxNorm / (norm + 1e-6);
    for (auto &[name, p] : params)
      if (p.grad().defined())
        p.mutable_grad().mul_(scale);
  }
  return norm;
}

void AdamW::step(double lr) {
  torch::NoGradGuard noGrad;
  ++stepCount;
  const double b1 = cfg.beta1, b2 = cfg.beta2;
  const double c1 = 1 - std::pow(b1, double(stepCount));
  const double c2 = 1 - std::pow(b2, double(stepCount));
  const bool sharded = cfg.shardOptimizer && dist.worldSize() > 1;
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor &p = params[i].second;
    if (!sharded || owner[i] == dist.rank()) {
      torch::Tensor g = p.grad().defined() ? p.grad().to(torch::kFloat32)
                                           : torch::zeros_like(moments[i].expAvg);
      moments[i].expAvg.mul_(b1).add_(g, 1 - b1);
      moments[i].expAvgSq.mul_(b2).addcmul_(g, g, 1 - b2);
      torch::Tensor update = (moments[i].expAvg / c1) /
                             ((moments[i].expAvgSq / c2).sqrt() + cfg.eps);
      torch::Tensor p32 = p.to(torch::kFloat32);
      p32.mul_(1 - lr * cfg.weightDecay).sub_(update, lr);
      p.copy_(p32);
    }
    if (sharded)
      dist.broadcast(p, owner[i]);
  }
}

std::map<std::string, torch::Tensor> AdamW::stateForCheckpoint() {
  std::map<std::string, torch::Tensor> state;
  const bool sharded = cfg.shardOptimizer && dist.worldSize() > 1;
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor m = moments[i].expAvg, v = moments[i].expAvgSq;
    if (sharded) {
      auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(
          params[i].second.device());
      if (!m.defined()) {
        m = torch::empty(params[i].second.sizes(), f32);
        v = torch::empty(params[i].second.sizes(), f32);
      }
      dist.broadcast(m, owner[i]);
      dist.broadcast(v, owner[i]);
    }
    state[params[i].first + ".exp_avg"] = m.cpu();
    state[params[i].first + ".exp_avg_sq"] = v.cpu();
  }
  return state;
}

Status AdamW::loadState(const std::map<std::string, torch::Tensor> &state,
                        int64_t steps) {
  torch::NoGradGuard noGrad;
  for (size_t i = 0; i < params.size(); ++i) {
    for (auto [suffix, target] :
         {std::pair<const char *, torch::Tensor *>{".exp_avg", &moments[i].expAvg},
          {".exp_avg_sq", &moments[i].expAvgSq}}) {
      auto it = state.find(params[i].first + suffix);
      if (it == state.end())
        return Error("", 0, 0, params[i].first + suffix,
                     "missing from the optimizer state");
      if (it->second.sizes() != params[i].second.sizes())
        return Error("", 0, 0, params[i].first + suffix,
                     "has another shape than the parameter");
      if (target->defined())
        target->copy_(it->second);
    }
  }
  stepCount = steps;
  return {};
}

} // namespace dice
