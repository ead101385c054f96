// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/common/tensor_buffer.h"
#include "engine/common/value_precision.h"

namespace rookery::net {

/// The protocol versions this build speaks. A link agrees on the highest version both
/// ends support during the Hello exchange (docs/protocol.md).
inline constexpr uint32_t kProtocolVersion = 4;
inline constexpr uint32_t kOldestProtocolVersion = 4;

enum class NodeRole : uint8_t { Node = 1, Coordinator = 2 };

/// How float32 activations and gradients travel on a link (agreed per link).
enum class Compression : uint8_t { None = 0, Fp16 = 1, Bf16 = 2 };

std::string_view compressionName(Compression c);
/// "none", "fp16" or "bf16"; throws rookery::Error naming the word otherwise.
Compression compressionFromName(std::string_view name);

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

/// The most padding a Ping carries: within a coordinator's 64 KiB limit on what a node
/// sends it.
inline constexpr size_t kMaxPingPaddingBytes = 60u << 10;

/// Answered by the link itself with a Pong of the same nonce. `padding` is never read:
/// padded pings measure upload (UploadProbe).
struct Ping
{
    uint64_t nonce = 0;
    std::string padding; ///< at most kMaxPingPaddingBytes
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
    TensorBuffer labels;     ///< int64, travels with the microbatch to the last stage; may be empty
    bool evaluation = false; ///< a test batch: forward only, answered with a TestTally
    uint64_t testId = 0;     ///< a test batch's test, from 1; 0: not numbered (an older root)
    bool testLast = false;   ///< the test's last batch
};

/// The last stage's answer to a test batch: checked on decoding (correct <= samples <=
/// kMaxTestSamples, lossSum finite and not negative).
struct TestTally
{
    static constexpr uint64_t kMaxTestSamples = 1'000'000;
    uint64_t samples = 0;
    uint64_t correct = 0;
    double lossSum = 0;
    bool operator==(const TestTally &) const = default;
};

/// Pipeline backward pass: the gradient with respect to a stage's input.
struct Gradients
{
    uint64_t microbatchId = 0;
    uint64_t weightVersion = 0;
    TensorBuffer gradients;
    std::optional<TestTally> tally; ///< the answer to a test batch; `gradients` is then empty
};

/// One step of a ring all-reduce.
struct RingChunk
{
    uint64_t ringId = 0;
    uint64_t round = 0;      ///< which all-reduce (e.g. the weight version being averaged)
    uint32_t step = 0;       ///< 0 .. 2(n-1)-1: reduce-scatter, then all-gather
    uint32_t chunkIndex = 0; ///< which of the n chunks
    TensorBuffer tensor;
    uint64_t base = 0; ///< 0: the members' own values; else differences from the base this tag names
    /// The values are exact in this precision and travel in it on any link (received as
    /// float32)
    ValuePrecision precision = ValuePrecision::Float32;
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

// ---- Coordinator messages (docs/coordinator-api.md). engine/coord turns them into
// its own value types; these mirror the schema field for field.

/// Another node: its id and the "host:port" of its peer listener. Empty when unset.
struct PeerAddress
{
    std::string nodeId;
    std::string address;
    bool unreachable = false; ///< peers cannot dial it: it dials them
    bool empty() const { return nodeId.empty(); }
    bool operator==(const PeerAddress &) const = default;
};

/// A ring averaging layers [firstLayer, lastLayer) across clusters, as its member at
/// `rank` sees it: the ring's size and that member's two neighbours.
struct RingMembership
{
    uint64_t ringId = 0;
    uint32_t firstLayer = 0;
    uint32_t lastLayer = 0;
    uint32_t rank = 0; ///< the receiving node's position, 0 .. size-1
    uint32_t size = 1;
    PeerAddress previous; ///< empty when alone
    PeerAddress next;     ///< empty when alone
    bool operator==(const RingMembership &) const = default;
};

enum class AssignmentState : uint8_t { Waiting = 0, Training = 1, Stopped = 2 };

struct AssignmentInfo
{
    uint64_t version = 0;
    AssignmentState state = AssignmentState::Waiting;
    std::string reason;
    int32_t cluster = -1;
    uint32_t clusterCount = 0;
    uint32_t stage = 0;
    uint32_t stages = 0;
    uint32_t firstLayer = 0;
    uint32_t lastLayer = 0;
    PeerAddress previous;
    PeerAddress next;
    std::vector<RingMembership> rings;
    uint32_t shardIndex = 0;
    uint32_t shardCount = 0;
    PeerAddress weightsFrom;
    bool unreachable = false; ///< peers cannot dial this node: it dials them
    bool operator==(const AssignmentInfo &) const = default;
};

struct RunInfo
{
    std::string modelJson;
    std::string optimizerJson;
    uint32_t microbatch = 0;
    uint32_t accumulation = 0;
    uint32_t averagingInterval = 0;
    uint64_t seed = 0;
    uint64_t totalSteps = 0;
    std::string dataset;
    std::string runId;
    double outerLearningRate = 0; ///< 0: not sent (plain averaging)
    double outerMomentum = 0;
    bool overlapAveraging = false;
    std::string datasetSha256; ///< the manifest hash of the dataset the coordinator serves; empty: none
    uint32_t maxWindow = 0;    ///< a root's cap on microbatches in flight; 0: the node's default
    bool operator==(const RunInfo &) const = default;
};

struct Register
{
    std::string name;
    std::string listenAddress;
    std::string profileJson;
    std::string nonce; ///< 16 random bytes
    int64_t timestampMs = 0;
    std::string software;
    double uploadBytesPerSecond = 0;
    std::string publicKeyPem; ///< must be the key of the link's certificate
    uint16_t relayPort = 0;   ///< this node runs a relay for others on this port; 0: none
    std::string invite;       ///< the join token (invite-only coordinators, new keys)
    bool operator==(const Register &) const = default;
};

struct RegisterReply
{
    std::string nodeId;
    std::string certificatePem;
    std::string caCertificatePem;
    RunInfo run;
    AssignmentInfo assignment;
    uint32_t heartbeatIntervalMs = 0;
    bool operator==(const RegisterReply &) const = default;
};

enum class NodeActivity : uint8_t { Unknown = 0, Waiting = 1, Loading = 2, Training = 3, Paused = 4, Failed = 5 };
enum class AwayReason : uint8_t {
    None = 0,
    PausedByUser = 1,
    Snoozed = 2,
    OnBattery = 3,
    OutsideSchedule = 4,
    WaitingForIdle = 5
};

/// A node's measure of its link to one neighbour.
struct LinkFigure
{
    std::string peerId;
    double uploadBytesPerSecond = 0;
    uint64_t roundTripUs = 0;
    bool operator==(const LinkFigure &) const = default;
};

struct NodeMetrics
{
    double samplesPerSecond = 0;
    uint64_t step = 0;
    double loss = 0;
    NodeActivity state = NodeActivity::Unknown;
    uint64_t samplesTotal = 0;
    double busyFraction = 0;
    AwayReason away = AwayReason::None;
    uint64_t sleptSeconds = 0;
    double ownSamplesPerSecond = 0;
    /// Peer id -> values of it this node refused, since it started.
    std::vector<std::pair<std::string, uint64_t>> complaints;
    /// Its links to its neighbours as it measured them.
    std::vector<LinkFigure> links;
    /// Its CPU caps' offer now over the one it registered with; 0 = unknown.
    double computeOfferScale = 0;
    bool operator==(const NodeMetrics &) const = default;
};

struct Heartbeat
{
    uint64_t seq = 0;
    uint64_t assignmentVersion = 0;
    NodeMetrics metrics;
    bool operator==(const Heartbeat &) const = default;
};

struct HeartbeatAck
{
    uint64_t seq = 0;
    uint64_t assignmentVersion = 0;
    uint32_t heartbeatIntervalMs = 0; ///< from now on; 0: unchanged
    bool operator==(const HeartbeatAck &) const = default;
};

struct AssignmentUpdate
{
    AssignmentInfo assignment;
    bool operator==(const AssignmentUpdate &) const = default;
};

struct Leave
{
    std::string reason;
    bool operator==(const Leave &) const = default;
};

/// A node asks for a relayed link to `peerId` (neither can be dialled).
struct RelayRequest
{
    std::string peerId;
    bool operator==(const RelayRequest &) const = default;
};

/// The coordinator's answer to both ends of a relayed pair; an empty token is a refusal.
struct RelayGrant
{
    std::string peerId;
    std::string address; ///< "host:port" of the relay
    std::string token;   ///< 16 bytes, single use
    bool accept = false; ///< run TLS as the server (the peer dials)
    std::string reason;  ///< why not, for a refusal
    bool operator==(const RelayGrant &) const = default;
};

/// The coordinator to a node that runs a relay: expect this pair (each presents its
/// 16-byte token).
struct RelayExpect
{
    std::string nodeA;
    std::string nodeB;
    std::string tokenA;
    std::string tokenB;
    bool operator==(const RelayExpect &) const = default;
};

/// The coordinator to every node: the node ids quarantined for the run. A node drops its
/// links to them and refuses new ones.
struct BanList
{
    std::vector<std::string> nodeIds;
    bool operator==(const BanList &) const = default;
};

/// A node asks its coordinator for part of a dataset file (manifest or shard) by hash.
struct DataRequest
{
    std::string sha256;
    uint64_t offset = 0;
    uint32_t length = 0; ///< at most kMaxDataPieceBytes
    bool operator==(const DataRequest &) const = default;
};

/// The largest piece of a dataset file one DataPiece carries.
inline constexpr uint32_t kMaxDataPieceBytes = 1u << 20;

/// The coordinator's answer to a DataRequest: bytes [offset, offset + data.bytes) of a
/// file of `total` bytes, or, with no data, the `reason` it refused.
struct DataPiece
{
    std::string sha256;
    uint64_t offset = 0;
    uint64_t total = 0;
    TensorBuffer data; ///< UInt8, 1-D
    std::string reason;
};

enum class CoordinatorErrorCode : uint8_t {
    Unspecified = 0,
    BadRequest = 1,
    Replay = 2,
    UnknownNode = 3,
    NotRegistered = 4,
    Full = 5,
    Internal = 6,
    NotInvited = 7, ///< invite-only, and the registration had no valid join token
    Limited = 8,    ///< too many registrations or nodes from its address: try again later
    Banned = 9,     ///< quarantined for the run: its peers refused its values
};

/// A request was refused; the coordinator closes the link after sending it.
struct CoordinatorError
{
    CoordinatorErrorCode code = CoordinatorErrorCode::Unspecified;
    std::string reason;
    bool operator==(const CoordinatorError &) const = default;
};

/// Every message a link carries.
using Message =
    std::variant<Hello, HelloAck, Ping, Pong, Goodbye, Activations, Gradients, RingChunk, WeightsRequest, WeightsReply,
                 StageError, Register, RegisterReply, Heartbeat, HeartbeatAck, AssignmentUpdate, Leave,
                 CoordinatorError, RelayRequest, RelayGrant, RelayExpect, BanList, DataRequest, DataPiece>;

/// "Activations", "Hello", ...
std::string_view messageName(const Message &message);

/// True when the two buffers have the same dtype, shape and bytes (tests, checks).
bool sameTensor(const TensorBuffer &a, const TensorBuffer &b);

} // namespace rookery::net
