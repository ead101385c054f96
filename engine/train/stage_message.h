// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "engine/common/tensor_buffer.h"

namespace rookery::train {

/// A microbatch on its way down the pipeline: the activations a stage produced, and
/// the labels, which only the leaf reads but which travel with the activations so that
/// no stage has to match two streams.
struct ForwardMessage
{
    int64_t microbatch = 0;    ///< numbered by the root from 0 within a training run
    int64_t weightVersion = 0; ///< the sender's optimizer steps when it computed this
    TensorBuffer activations;  ///< float32 [batch, ...]
    TensorBuffer labels;       ///< int64 [batch]
    /// A batch of the root's test set: every stage runs it forward without gradients,
    /// and the leaf answers with its EvaluationTally instead of a gradient.
    bool evaluation = false;
    /// Of a test batch: its test, numbered by the root from 1 (0: not numbered, from an
    /// older root over the network), and whether it is the test's last batch. A stage
    /// answers every batch of one test with the weights it held when the first arrived.
    int64_t testId = 0;
    bool testLast = false;
};

/// What the leaf found for one test batch: the pipeline tests its model by passing the
/// test set through, so that no stage ever needs another's weights.
struct EvaluationTally
{
    int64_t samples = 0;
    int64_t correct = 0; ///< arg-max of the logits equal to the label
    double lossSum = 0;  ///< cross-entropy summed over the samples
};

/// The gradient of a stage's input for one microbatch, on its way back up. Empty when
/// no stage above has parameters (nobody needs it), but always sent: it also tells the
/// root that the microbatch is done.
struct BackwardMessage
{
    int64_t microbatch = 0;
    TensorBuffer gradient; ///< float32, the shape of the receiver's output
    /// The answer to a test batch (ForwardMessage::evaluation), passed up unchanged to
    /// the root; `gradient` is then empty.
    std::optional<EvaluationTally> tally;
};

enum class StopKind : uint8_t {
    Finished,  ///< the root fed all microbatches of the run and all came back
    Cancelled, ///< a stage's work gate closed, or someone stopped the pipeline
    Failed,    ///< a stage threw
};

/// The end of a run. Finished travels in band after the last forward message;
/// Cancelled and Failed are aborts that reach every stage at once.
struct StopMessage
{
    StopKind kind = StopKind::Finished;
    int stage = -1;     ///< the stage it started from; -1 when from outside the pipeline
    std::string reason; ///< for Failed: the error, ready to show
};

/// What travels between stages. Thread safety: plain values; the tensors they carry are
/// shared read-only (see TensorBuffer).
using StageMessage = std::variant<ForwardMessage, BackwardMessage, StopMessage>;

} // namespace rookery::train
