// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/common/tensor_buffer.h"

namespace rookery::net {

/// The protocol versions this build speaks. A link agrees on the highest version both
/// ends support during the Hello exchange (docs/protocol.md).
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kOldestProtocolVersion = 1;

enum class NodeRole : uint8_t { Node = 1, Coordinator = 2 };

/// How float32 activations and gradients travel on a link (agreed per link).
enum class Compression : uint8_t { None = 0, Fp16 = 1, Bf16 = 2 };

std::string_view compressionName(Compression c);

/// Feature names a Hello may list (docs/protocol.md, "Features").
inline constexpr std::string_view kFeatureFp16 = "compress-fp16";
inline constexpr std::string_view kFeatureBf16 = "compress-bf16";

/// Why a Goodbye was sent.
enum class GoodbyeCode : uint8_t { Normal = 0, ShuttingDown = 1, VersionMismatch = 2, Refused = 3, ProtocolError = 4 };

/// The first message of a link, sent by the side that dialled.
struct Hello
{
    uint32_t minVersion = kOldestProtocolVersion;
    uint32_t maxVersion = kProtocolVersion;
    std::string nodeId;
    NodeRole role = NodeRole::Node;
    std::vector<std::string> features;
    Compression compression = Compression::None; ///< what the dialler asks for
    std::string software;
    bool operator==(const Hello &) const = default;
};

/// The accepting side's answer: the agreed version and compression.
struct HelloAck
{
    uint32_t version = kProtocolVersion;
    std::string nodeId;
    NodeRole role = NodeRole::Node;
    std::vector<std::string> features;
    Compression compression = Compression::None;
    std::string software;
    bool operator==(const HelloAck &) const = default;
};

struct Ping
{
    uint64_t nonce = 0;
    bool operator==(const Ping &) const = default;
};

struct Pong
{
    uint64_t nonce = 0;
    bool operator==(const Pong &) const = default;
};

/// A link is about to close; `reason` is for the other side's log.
struct Goodbye
{
    GoodbyeCode code = GoodbyeCode::Normal;
    std::string reason;
    bool operator==(const Goodbye &) const = default;
};

/// Pipeline forward pass: one microbatch's activations for the next stage.
struct Activations
{
    uint64_t microbatchId = 0;
    uint64_t weightVersion = 0;
    TensorBuffer activations;
    TensorBuffer labels; ///< int64, travels with the microbatch to the last stage; may be empty
};

/// Pipeline backward pass: the gradient with respect to a stage's input.
struct Gradients
{
    uint64_t microbatchId = 0;
    uint64_t weightVersion = 0;
    TensorBuffer gradients;
};

/// One step of a ring all-reduce.
struct RingChunk
{
    uint64_t ringId = 0;
    uint64_t round = 0;      ///< which all-reduce (e.g. the weight version being averaged)
    uint32_t step = 0;       ///< 0 .. 2(n-1)-1: reduce-scatter, then all-gather
    uint32_t chunkIndex = 0; ///< which of the n chunks
    TensorBuffer tensor;
};

/// A node taking over a stage asks for its current weights (all when `names` is empty).
struct WeightsRequest
{
    uint64_t requestId = 0;
    uint32_t stage = 0;
    std::vector<std::string> names;
    bool operator==(const WeightsRequest &) const = default;
};

struct NamedTensorBuffer
{
    std::string name;
    TensorBuffer tensor;
};

struct WeightsReply
{
    uint64_t requestId = 0;
    uint32_t stage = 0;
    uint64_t weightVersion = 0;
    std::vector<NamedTensorBuffer> tensors;
};

/// A stage could not process a microbatch.
struct StageError
{
    uint32_t stage = 0;
    uint64_t microbatchId = 0;
    std::string reason;
    bool operator==(const StageError &) const = default;
};

/// Every message a link carries. Coordinator messages join this list in a later
/// version (the schema keeps field numbers for them).
using Message = std::variant<Hello, HelloAck, Ping, Pong, Goodbye, Activations, Gradients, RingChunk, WeightsRequest,
                             WeightsReply, StageError>;

/// "Activations", "Hello", ...
std::string_view messageName(const Message &message);

/// True when the two buffers have the same dtype, shape and bytes (tests, checks).
bool sameTensor(const TensorBuffer &a, const TensorBuffer &b);

} // namespace rookery::net
