// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/testing_misbehaviour.h"

#include <cstdlib>
#include <sstream>
#include <string>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/device/capability_profile.h"

namespace rookery::participant {

const TestingMisbehaviour &testingMisbehaviour()
{
    static const TestingMisbehaviour chosen = [] {
        TestingMisbehaviour m;
        const char *v = std::getenv("ROOKERY_TESTING_MISBEHAVE");
        if (!v || !*v)
            return m;
        std::istringstream list(v);
        for (std::string word; std::getline(list, word, ',');) {
            if (word == "ring-poison")
                m.ringPoison = true;
            else if (word == "activation-scale")
                m.activationScale = true;
            else if (word == "nan-gradients")
                m.nanGradients = true;
            else if (word == "forged-finished")
                m.forgedFinished = true;
            else if (word == "forged-failed")
                m.forgedFailed = true;
            else if (word == "forged-weights")
                m.forgedWeights = true;
            else if (word == "forged-tally")
                m.forgedTally = true;
            else if (word == "claim-capacity")
                m.claimCapacity = true;
            else if (word == "claim-little-memory")
                m.claimLittleMemory = true;
            else
                throw Error("ROOKERY_TESTING_MISBEHAVE: unknown misbehaviour '" + word +
                            "' (ring-poison, activation-scale, nan-gradients, forged-finished, forged-failed, "
                            "forged-weights, forged-tally, claim-capacity, claim-little-memory)");
        }
        log::warning("swarm", std::string("ROOKERY_TESTING_MISBEHAVE=") + v +
                                  " (a testing option): this node sends poisoned values on purpose" +
                                  (m.ringPoison ? "; ring chunks scaled by -1e6" : "") +
                                  (m.activationScale ? "; activations scaled by 1e6" : "") +
                                  (m.nanGradients ? "; NaN gradients" : "") +
                                  (m.forgedFinished ? "; forged 'finished' messages" : "") +
                                  (m.forgedFailed ? "; forged 'failed' messages" : "") +
                                  (m.forgedWeights ? "; NaN weights replies" : "") +
                                  (m.forgedTally ? "; test tallies it did not count" : "") +
                                  (m.claimCapacity ? "; a claim of 10^6 GFLOP/s" : "") +
                                  (m.claimLittleMemory ? "; a claim of 512 KiB of memory" : ""));
        return m;
    }();
    return chosen;
}

std::string claimedProfile(const std::string &profileJson)
{
    const auto &m = testingMisbehaviour();
    if (!m.claimCapacity && !m.claimLittleMemory)
        return profileJson;
    auto p = device::capabilityProfileFromJson(profileJson);
    if (m.claimCapacity)
        p.gflopsOneThread = p.gflopsAllThreads = 1e6;
    if (m.claimLittleMemory)
        p.ramAvailableBytes = TestingMisbehaviour::kLittleMemoryBytes;
    return device::toJson(p);
}

} // namespace rookery::participant
