// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/optimizer_config.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::train {

std::string optimizerKindName(OptimizerKind kind) { return kind == OptimizerKind::Sgd ? "sgd" : "adamw"; }

OptimizerKind optimizerKindFromName(const std::string &name)
{
    if (name == "sgd")
        return OptimizerKind::Sgd;
    if (name == "adamw")
        return OptimizerKind::AdamW;
    throw Error("unknown optimizer '" + name + "' (known: sgd, adamw)");
}

std::string decayName(LearningRateDecay decay)
{
    switch (decay) {
    case LearningRateDecay::Cosine:
        return "cosine";
    case LearningRateDecay::Constant:
        return "constant";
    case LearningRateDecay::Tail:
        break;
    }
    return "tail";
}

LearningRateDecay decayFromName(const std::string &name)
{
    for (auto d : {LearningRateDecay::Tail, LearningRateDecay::Cosine, LearningRateDecay::Constant})
        if (decayName(d) == name)
            return d;
    throw Error("unknown learning-rate schedule '" + name + "' (known: tail, cosine, constant)");
}

void validate(const OptimizerConfig &c)
{
    auto check = [](bool ok, const std::string &what) {
        if (!ok)
            throw Error("optimizer setting out of range: " + what);
    };
    check(std::isfinite(c.learningRate) && c.learningRate > 0 && c.learningRate <= 10,
          "learning rate must be in (0, 10]");
    check(c.momentum >= 0 && c.momentum < 1, "momentum must be in [0, 1)");
    check(c.weightDecay >= 0 && c.weightDecay < 1, "weight decay must be in [0, 1)");
    check(c.beta1 >= 0 && c.beta1 < 1, "beta1 must be in [0, 1)");
    check(c.beta2 >= 0 && c.beta2 < 1, "beta2 must be in [0, 1)");
    check(c.epsilon > 0 && c.epsilon < 1, "epsilon must be in (0, 1)");
    check(c.warmupSteps >= 0, "warm-up steps cannot be negative");
    check(c.finalLearningRateFactor >= 0 && c.finalLearningRateFactor <= 1,
          "the final learning-rate factor must be in [0, 1]");
}

std::string toJson(const OptimizerConfig &c)
{
    nlohmann::json j = {{"kind", optimizerKindName(c.kind)},
                        {"lr", c.learningRate},
                        {"momentum", c.momentum},
                        {"weight_decay", c.weightDecay},
                        {"beta1", c.beta1},
                        {"beta2", c.beta2},
                        {"eps", c.epsilon},
                        {"warmup_steps", c.warmupSteps},
                        {"decay", decayName(c.decay)},
                        {"final_lr_factor", c.finalLearningRateFactor}};
    return j.dump();
}

OptimizerConfig optimizerConfigFromJson(const std::string &text)
{
    OptimizerConfig c;
    try {
        const auto j = nlohmann::json::parse(text);
        c.kind = optimizerKindFromName(j.at("kind").get<std::string>());
        c.learningRate = j.at("lr").get<double>();
        c.momentum = j.at("momentum").get<double>();
        c.weightDecay = j.at("weight_decay").get<double>();
        c.beta1 = j.at("beta1").get<double>();
        c.beta2 = j.at("beta2").get<double>();
        c.epsilon = j.at("eps").get<double>();
        // Settings written before schedules were configurable: the tail anneal, no warm-up.
        c.warmupSteps = j.value("warmup_steps", int64_t(0));
        c.decay = decayFromName(j.value("decay", std::string("tail")));
        c.finalLearningRateFactor = j.value("final_lr_factor", 0.1);
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("optimizer settings are not valid JSON of the expected form: ") + e.what());
    }
    validate(c);
    return c;
}

double staleRateScale(int64_t staleness) { return staleness > 0 ? 1.0 / (1.0 + double(staleness)) : 1.0; }

double stateCopies(const OptimizerConfig &config)
{
    if (config.kind == OptimizerKind::AdamW)
        return 2;
    return config.momentum != 0 ? 1 : 0;
}

} // namespace rookery::train
