// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace rookery::participant {

/// How this node misbehaves on purpose, for tests of the others' defences: read once
/// from ROOKERY_TESTING_MISBEHAVE, a comma-separated list (and said in the log). Never set
/// in the product.
///  - ring-poison: every ring chunk it sends is scaled by -1e6;
///  - activation-scale: every activation it sends is scaled by 1e6;
///  - nan-gradients: every gradient it sends is NaN;
///  - forged-finished: after every 40th activation or gradient it sends, a "finished"
///    (down the pipeline: long before the run's last step; up: never allowed);
///  - forged-failed: after every 40th activation or gradient it sends, a "failed" (its
///    stage failed; it did not);
///  - forged-weights: every weights reply it sends holds NaN;
///  - forged-tally: as a last stage, it answers every test batch with a tally of one
///    sample more than the batch, all right (an accuracy it did not measure);
///  - claim-capacity: its profile claims 10^6 GFLOP/s (one thread and all), far more than
///    it has;
///  - claim-little-memory: its profile claims 512 KiB of memory (kLittleMemoryBytes), so
///    that of the MLP it can hold only a last stage of the final small layer: the stage
///    that answers its root's test batches (a root, even one of the parameter-free
///    Flatten alone, stashes microbatches of 784 floats and needs more).
struct TestingMisbehaviour
{
    static constexpr uint64_t kLittleMemoryBytes = 512 * 1024;

    bool ringPoison = false;
    bool activationScale = false;
    bool nanGradients = false;
    bool forgedFinished = false;
    bool forgedFailed = false;
    bool forgedWeights = false;
    bool forgedTally = false;
    bool claimCapacity = false;
    bool claimLittleMemory = false;
};

/// The profile JSON a node registers with: `profileJson` as measured, or its compute
/// claim changed as claim-capacity or claim-little-memory say.
std::string claimedProfile(const std::string &profileJson);

/// Throws rookery::Error naming an unknown misbehaviour.
const TestingMisbehaviour &testingMisbehaviour();

} // namespace rookery::participant
