// SPDX-License-Identifier: GPL-3.0-or-later
// Envelope -> Message: the tensors a message carries and the generated protobuf types
// back into our structs, refusing values this version cannot interpret.
#include "engine/net/wire_schema.h"

#include <algorithm>
#include <cmath>

namespace rookery::net::schema {
namespace {

using E = wire::Envelope;

std::vector<std::string> listOf(const google::protobuf::RepeatedPtrField<std::string> &in)
{
    return {in.begin(), in.end()};
}

PeerAddress fromWire(const wire::PeerAddress &p) { return {p.node_id(), p.address(), p.unreachable()}; }

AssignmentInfo fromWire(const wire::Assignment &w)
{
    AssignmentInfo a;
    a.version = w.version();
    a.state = AssignmentState(w.state());
    a.reason = w.reason();
    a.cluster = w.cluster();
    a.clusterCount = w.cluster_count();
    a.stage = w.stage();
    a.stages = w.stages();
    a.firstLayer = w.first_layer();
    a.lastLayer = w.last_layer();
    if (w.has_previous())
        a.previous = fromWire(w.previous());
    if (w.has_next())
        a.next = fromWire(w.next());
    for (const auto &r : w.rings()) {
        RingMembership m{r.ring_id(), r.first_layer(), r.last_layer(), r.rank(), std::max(1u, r.size()), {}, {}};
        if (r.has_previous())
            m.previous = fromWire(r.previous());
        if (r.has_next())
            m.next = fromWire(r.next());
        a.rings.push_back(std::move(m));
    }
    a.shardIndex = w.shard_index();
    a.shardCount = w.shard_count();
    if (w.has_weights_from())
        a.weightsFrom = fromWire(w.weights_from());
    a.unreachable = w.unreachable();
    return a;
}

RunInfo fromWire(const wire::RunConfig &w)
{
    return {w.model_json(),     w.optimizer_json(),    w.microbatch(),     w.accumulation(), w.averaging_interval(),
            w.seed(),           w.total_steps(),       w.dataset(),        w.run_id(),       w.outer_learning_rate(),
            w.outer_momentum(), w.overlap_averaging(), w.dataset_sha256(), w.max_window()};
}

NodeMetrics fromWire(const wire::NodeMetrics &w)
{
    const int state = w.state() >= 0 && w.state() <= 5 ? int(w.state()) : 0; // a newer node's state: unknown
    const int away = w.away() >= 0 && w.away() <= 5 ? int(w.away()) : 0;     // a newer node's reason: none given
    NodeMetrics m{w.samples_per_second(), w.step(),          w.loss(),
                  NodeActivity(state),    w.samples_total(), w.busy_fraction(),
                  AwayReason(away),       w.slept_seconds(), w.own_samples_per_second()};
    for (const auto &c : w.complaints())
        m.complaints.emplace_back(c.peer_id(), c.refused());
    for (const auto &l : w.links())
        m.links.push_back({l.peer_id(), l.upload_bytes_per_second(), l.round_trip_us()});
    m.computeOfferScale = w.compute_offer_scale();
    return m;
}

bool validRole(int r) { return r == wire::ROLE_NODE || r == wire::ROLE_COORDINATOR; }
bool validCompression(int c) { return c >= 0 && c <= 2; }
// A node must not guess what a newer coordinator's state means.
bool validAssignmentState(int s) { return s >= 0 && s <= 2; }

// What makes an assignment impossible to follow; "" when nothing does.
std::string assignmentProblem(const wire::Assignment &a)
{
    if (!validAssignmentState(a.state()))
        return "the assignment has an unknown state " + std::to_string(int(a.state()));
    for (const auto &ring : a.rings()) {
        // A member of a ring of two or more has both neighbours; one alone has none.
        const uint32_t size = std::max(1u, ring.size());
        if (ring.rank() >= size)
            return "a ring's rank " + std::to_string(ring.rank()) + " is not below its size " + std::to_string(size);
        const bool both = ring.has_previous() && ring.has_next(), none = !ring.has_previous() && !ring.has_next();
        if (size >= 2 ? !both : !none)
            return "a ring of " + std::to_string(size) +
                   (size >= 2 ? " members lacks a neighbour" : " names neighbours");
    }
    return {};
}

} // namespace

std::vector<InTensor> tensorDescriptors(const wire::Envelope &env, std::string &reason)
{
    std::vector<InTensor> out;
    auto required = [&](bool has, const wire::Tensor &t, const char *role) {
        if (!has)
            reason = std::string("the message has no ") + role + " tensor";
        else
            out.push_back({&t, role});
        return has;
    };
    switch (env.body_case()) {
    case E::kActivations:
        if (required(env.activations().has_activations(), env.activations().activations(), "activations") &&
            env.activations().has_labels())
            out.push_back({&env.activations().labels(), "labels"});
        break;
    case E::kGradients:
        required(env.gradients().has_gradients(), env.gradients().gradients(), "gradients");
        break;
    case E::kRingChunk:
        required(env.ring_chunk().has_tensor(), env.ring_chunk().tensor(), "ring chunk");
        break;
    case E::kWeightsReply:
        for (const auto &n : env.weights_reply().tensors())
            if (!required(n.has_tensor(), n.tensor(), "weight"))
                break;
        break;
    case E::kDataPiece:
        if (env.data_piece().has_data())
            out.push_back({&env.data_piece().data(), "data"});
        break;
    default:
        break;
    }
    if (!reason.empty())
        out.clear();
    return out;
}

std::optional<Message> fromEnvelope(const wire::Envelope &env, std::vector<TensorBuffer> &t, std::string &reason)
{
    switch (env.body_case()) {
    case E::kHello: {
        const auto &h = env.hello();
        if (!validRole(h.role()) || !validCompression(h.compression()) || h.min_version() > h.max_version()) {
            reason = "Hello has an invalid role, compression or version range";
            return std::nullopt;
        }
        return Hello{h.min_version(),    h.max_version(),      h.node_id(),
                     NodeRole(h.role()), listOf(h.features()), Compression(h.compression()),
                     h.software()};
    }
    case E::kHelloAck: {
        const auto &h = env.hello_ack();
        if (!validRole(h.role()) || !validCompression(h.compression())) {
            reason = "HelloAck has an invalid role or compression";
            return std::nullopt;
        }
        return HelloAck{
            h.version(), h.node_id(), NodeRole(h.role()), listOf(h.features()), Compression(h.compression()),
            h.software()};
    }
    case E::kPing:
        return Ping{env.ping().nonce(), env.ping().padding()};
    case E::kPong:
        return Pong{env.pong().nonce()};
    case E::kGoodbye:
        return Goodbye{GoodbyeCode(std::clamp(int(env.goodbye().code()), 0, 4)), env.goodbye().reason()};
    case E::kActivations: {
        const auto &a = env.activations();
        if (t.size() == 2 && t[1].dtype != DType::Int64) {
            reason = "labels must be int64, not " + std::string(dtypeName(t[1].dtype));
            return std::nullopt;
        }
        // Test numbers mean something only on test batches.
        return Activations{a.microbatch_id(),
                           a.weight_version(),
                           std::move(t[0]),
                           t.size() == 2 ? std::move(t[1]) : TensorBuffer{},
                           a.evaluation(),
                           a.evaluation() ? a.test_id() : 0,
                           a.evaluation() && a.test_last()};
    }
    case E::kGradients: {
        const auto &g = env.gradients();
        Gradients out{g.microbatch_id(), g.weight_version(), std::move(t[0]), std::nullopt};
        if (g.has_tally()) {
            const auto &w = g.tally();
            if (w.samples() > TestTally::kMaxTestSamples || w.correct() > w.samples() || !std::isfinite(w.loss_sum()) ||
                w.loss_sum() < 0) {
                reason = "TestTally must count at most 1,000,000 samples, no more right than samples, and a finite "
                         "loss that is not negative";
                return std::nullopt;
            }
            out.tally = TestTally{w.samples(), w.correct(), w.loss_sum()};
        }
        return out;
    }
    case E::kRingChunk: {
        const auto &r = env.ring_chunk();
        return RingChunk{r.ring_id(), r.round(), r.step(), r.chunk_index(), std::move(t[0]), r.base()};
    }
    case E::kWeightsRequest: {
        const auto &w = env.weights_request();
        return WeightsRequest{w.request_id(), w.stage(), listOf(w.names())};
    }
    case E::kWeightsReply: {
        const auto &w = env.weights_reply();
        WeightsReply reply{w.request_id(), w.stage(), w.weight_version(), {}};
        for (int i = 0; i < w.tensors_size(); ++i)
            reply.tensors.push_back({w.tensors(i).name(), std::move(t[size_t(i)])});
        return reply;
    }
    case E::kStageError: {
        const auto &s = env.stage_error();
        return StageError{s.stage(), s.microbatch_id(), s.reason()};
    }
    case E::kRegistration: {
        const auto &r = env.registration();
        return Register{r.name(),
                        r.listen_address(),
                        r.profile_json(),
                        r.nonce(),
                        r.timestamp_ms(),
                        r.software(),
                        r.upload_bytes_per_second(),
                        r.public_key_pem(),
                        uint16_t(r.relay_port()),
                        r.invite()};
    }
    case E::kRegistrationReply: {
        const auto &r = env.registration_reply();
        if (reason = assignmentProblem(r.assignment()); !reason.empty())
            return std::nullopt;
        return RegisterReply{r.node_id(),       r.certificate_pem(),      r.ca_certificate_pem(),
                             fromWire(r.run()), fromWire(r.assignment()), r.heartbeat_interval_ms()};
    }
    case E::kHeartbeat: {
        const auto &h = env.heartbeat();
        return Heartbeat{h.seq(), h.assignment_version(), fromWire(h.metrics())};
    }
    case E::kHeartbeatAck:
        return HeartbeatAck{env.heartbeat_ack().seq(), env.heartbeat_ack().assignment_version(),
                            env.heartbeat_ack().heartbeat_interval_ms()};
    case E::kAssignmentUpdate:
        if (reason = assignmentProblem(env.assignment_update().assignment()); !reason.empty())
            return std::nullopt;
        return AssignmentUpdate{fromWire(env.assignment_update().assignment())};
    case E::kLeave:
        return Leave{env.leave().reason()};
    case E::kRelayRequest:
        return RelayRequest{env.relay_request().peer_id()};
    case E::kRelayGrant: {
        const auto &g = env.relay_grant();
        return RelayGrant{g.peer_id(), g.address(), g.token(), g.accept(), g.reason()};
    }
    case E::kRelayExpect: {
        const auto &e = env.relay_expect();
        return RelayExpect{e.node_a(), e.node_b(), e.token_a(), e.token_b()};
    }
    case E::kBanList: {
        const auto &ids = env.ban_list().node_ids();
        return BanList{std::vector<std::string>(ids.begin(), ids.end())};
    }
    case E::kDataRequest: {
        const auto &r = env.data_request();
        if (r.length() > kMaxDataPieceBytes) {
            reason = "a data request asks for " + std::to_string(r.length()) + " bytes, over the limit of " +
                     std::to_string(kMaxDataPieceBytes);
            return std::nullopt;
        }
        return DataRequest{r.sha256(), r.offset(), r.length()};
    }
    case E::kDataPiece: {
        const auto &p = env.data_piece();
        DataPiece piece{p.sha256(), p.offset(), p.total(), {}, p.reason()};
        if (!t.empty()) {
            if (t[0].dtype != DType::UInt8 || t[0].shape.size() != 1 || t[0].bytes > kMaxDataPieceBytes) {
                reason = "a data piece is uint8, 1-D and at most " + std::to_string(kMaxDataPieceBytes) + " bytes";
                return std::nullopt;
            }
            piece.data = std::move(t[0]);
        }
        return piece;
    }
    case E::kCoordinatorError: {
        const auto &c = env.coordinator_error();
        return CoordinatorError{CoordinatorErrorCode(std::clamp(int(c.code()), 0, 9)), c.reason()};
    }
    case E::BODY_NOT_SET:
        break;
    }
    reason = "the header carries no message";
    return std::nullopt;
}

} // namespace rookery::net::schema
