// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/wire_schema.h"

#include <algorithm>

#include "engine/common/error.h"

namespace rookery::net::schema {
namespace {

using E = wire::Envelope;

wire::Role toWire(NodeRole r) { return r == NodeRole::Coordinator ? wire::ROLE_COORDINATOR : wire::ROLE_NODE; }
wire::Compression toWire(Compression c) { return wire::Compression(int(c)); }
wire::GoodbyeCode toWire(GoodbyeCode c) { return wire::GoodbyeCode(int(c)); }

template <class List> void copyList(const std::vector<std::string> &in, List *out)
{
    for (const auto &s : in)
        *out->Add() = s;
}

std::vector<std::string> listOf(const google::protobuf::RepeatedPtrField<std::string> &in)
{
    return {in.begin(), in.end()};
}

void toWire(const PeerAddress &in, wire::PeerAddress *out)
{
    out->set_node_id(in.nodeId);
    out->set_address(in.address);
}

void toWire(const AssignmentInfo &a, wire::Assignment *w)
{
    w->set_version(a.version);
    w->set_state(wire::AssignmentState(int(a.state)));
    w->set_reason(a.reason);
    w->set_cluster(a.cluster);
    w->set_cluster_count(a.clusterCount);
    w->set_stage(a.stage);
    w->set_stages(a.stages);
    w->set_first_layer(a.firstLayer);
    w->set_last_layer(a.lastLayer);
    if (!a.previous.empty())
        toWire(a.previous, w->mutable_previous());
    if (!a.next.empty())
        toWire(a.next, w->mutable_next());
    for (const auto &r : a.rings) {
        auto *m = w->add_rings();
        m->set_ring_id(r.ringId);
        m->set_first_layer(r.firstLayer);
        m->set_last_layer(r.lastLayer);
        m->set_rank(r.rank);
        for (const auto &p : r.members)
            toWire(p, m->add_members());
    }
    w->set_shard_index(a.shardIndex);
    w->set_shard_count(a.shardCount);
    if (!a.weightsFrom.empty())
        toWire(a.weightsFrom, w->mutable_weights_from());
}

void toWire(const RunInfo &r, wire::RunConfig *w)
{
    w->set_model_json(r.modelJson);
    w->set_optimizer_json(r.optimizerJson);
    w->set_microbatch(r.microbatch);
    w->set_accumulation(r.accumulation);
    w->set_averaging_interval(r.averagingInterval);
    w->set_seed(r.seed);
    w->set_total_steps(r.totalSteps);
    w->set_dataset(r.dataset);
    w->set_run_id(r.runId);
}

PeerAddress fromWire(const wire::PeerAddress &p) { return {p.node_id(), p.address()}; }

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
        RingMembership m{r.ring_id(), r.first_layer(), r.last_layer(), r.rank(), {}};
        for (const auto &p : r.members())
            m.members.push_back(fromWire(p));
        a.rings.push_back(std::move(m));
    }
    a.shardIndex = w.shard_index();
    a.shardCount = w.shard_count();
    if (w.has_weights_from())
        a.weightsFrom = fromWire(w.weights_from());
    return a;
}

RunInfo fromWire(const wire::RunConfig &w)
{
    return {w.model_json(), w.optimizer_json(), w.microbatch(), w.accumulation(), w.averaging_interval(),
            w.seed(),       w.total_steps(),    w.dataset(),    w.run_id()};
}

NodeMetrics fromWire(const wire::NodeMetrics &w)
{
    const int state = w.state() >= 0 && w.state() <= 5 ? int(w.state()) : 0; // a newer node's state: unknown
    return {w.samples_per_second(), w.step(), w.loss(), NodeActivity(state), w.samples_total(), w.busy_fraction()};
}

struct ToEnvelope
{
    wire::Envelope &env;
    std::vector<OutTensor> &out;

    void tensor(const TensorBuffer &t, wire::Tensor *d, bool compressible, const char *role)
    {
        out.push_back({&t, d, compressible, role});
    }
    void operator()(const Hello &m)
    {
        auto *h = env.mutable_hello();
        h->set_min_version(m.minVersion);
        h->set_max_version(m.maxVersion);
        h->set_node_id(m.nodeId);
        h->set_role(toWire(m.role));
        copyList(m.features, h->mutable_features());
        h->set_compression(toWire(m.compression));
        h->set_software(m.software);
    }
    void operator()(const HelloAck &m)
    {
        auto *h = env.mutable_hello_ack();
        h->set_version(m.version);
        h->set_node_id(m.nodeId);
        h->set_role(toWire(m.role));
        copyList(m.features, h->mutable_features());
        h->set_compression(toWire(m.compression));
        h->set_software(m.software);
    }
    void operator()(const Ping &m) { env.mutable_ping()->set_nonce(m.nonce); }
    void operator()(const Pong &m) { env.mutable_pong()->set_nonce(m.nonce); }
    void operator()(const Goodbye &m)
    {
        env.mutable_goodbye()->set_code(toWire(m.code));
        env.mutable_goodbye()->set_reason(m.reason);
    }
    void operator()(const Activations &m)
    {
        auto *a = env.mutable_activations();
        a->set_microbatch_id(m.microbatchId);
        a->set_weight_version(m.weightVersion);
        tensor(m.activations, a->mutable_activations(), true, "activations");
        if (!m.labels.empty()) {
            if (m.labels.dtype != DType::Int64)
                throw Error("cannot send labels of type " + std::string(dtypeName(m.labels.dtype)) +
                            ": labels are int64");
            tensor(m.labels, a->mutable_labels(), false, "labels");
        }
    }
    void operator()(const Gradients &m)
    {
        auto *g = env.mutable_gradients();
        g->set_microbatch_id(m.microbatchId);
        g->set_weight_version(m.weightVersion);
        tensor(m.gradients, g->mutable_gradients(), true, "gradients");
    }
    void operator()(const RingChunk &m)
    {
        auto *r = env.mutable_ring_chunk();
        r->set_ring_id(m.ringId);
        r->set_round(m.round);
        r->set_step(m.step);
        r->set_chunk_index(m.chunkIndex);
        tensor(m.tensor, r->mutable_tensor(), false, "ring chunk");
    }
    void operator()(const WeightsRequest &m)
    {
        auto *w = env.mutable_weights_request();
        w->set_request_id(m.requestId);
        w->set_stage(m.stage);
        copyList(m.names, w->mutable_names());
    }
    void operator()(const WeightsReply &m)
    {
        auto *w = env.mutable_weights_reply();
        w->set_request_id(m.requestId);
        w->set_stage(m.stage);
        w->set_weight_version(m.weightVersion);
        for (const auto &t : m.tensors) {
            auto *n = w->add_tensors();
            n->set_name(t.name);
            tensor(t.tensor, n->mutable_tensor(), false, "weight");
        }
    }
    void operator()(const StageError &m)
    {
        auto *s = env.mutable_stage_error();
        s->set_stage(m.stage);
        s->set_microbatch_id(m.microbatchId);
        s->set_reason(m.reason);
    }
    void operator()(const Register &m)
    {
        auto *r = env.mutable_registration();
        r->set_name(m.name);
        r->set_listen_address(m.listenAddress);
        r->set_profile_json(m.profileJson);
        r->set_nonce(m.nonce);
        r->set_timestamp_ms(m.timestampMs);
        r->set_software(m.software);
        r->set_upload_bytes_per_second(m.uploadBytesPerSecond);
        r->set_public_key_pem(m.publicKeyPem);
    }
    void operator()(const RegisterReply &m)
    {
        auto *r = env.mutable_registration_reply();
        r->set_node_id(m.nodeId);
        r->set_certificate_pem(m.certificatePem);
        r->set_ca_certificate_pem(m.caCertificatePem);
        toWire(m.run, r->mutable_run());
        toWire(m.assignment, r->mutable_assignment());
        r->set_heartbeat_interval_ms(m.heartbeatIntervalMs);
    }
    void operator()(const Heartbeat &m)
    {
        auto *h = env.mutable_heartbeat();
        h->set_seq(m.seq);
        h->set_assignment_version(m.assignmentVersion);
        auto *x = h->mutable_metrics();
        x->set_samples_per_second(m.metrics.samplesPerSecond);
        x->set_step(m.metrics.step);
        x->set_loss(m.metrics.loss);
        x->set_state(wire::NodeActivity(int(m.metrics.state)));
        x->set_samples_total(m.metrics.samplesTotal);
        x->set_busy_fraction(m.metrics.busyFraction);
    }
    void operator()(const HeartbeatAck &m)
    {
        env.mutable_heartbeat_ack()->set_seq(m.seq);
        env.mutable_heartbeat_ack()->set_assignment_version(m.assignmentVersion);
    }
    void operator()(const AssignmentUpdate &m)
    {
        toWire(m.assignment, env.mutable_assignment_update()->mutable_assignment());
    }
    void operator()(const Leave &m) { env.mutable_leave()->set_reason(m.reason); }
    void operator()(const CoordinatorError &m)
    {
        env.mutable_coordinator_error()->set_code(wire::CoordinatorErrorCode(int(m.code)));
        env.mutable_coordinator_error()->set_reason(m.reason);
    }
};

bool validRole(int r) { return r == wire::ROLE_NODE || r == wire::ROLE_COORDINATOR; }
bool validCompression(int c) { return c >= 0 && c <= 2; }
// A node must not guess what a newer coordinator's state means.
bool validAssignmentState(int s) { return s >= 0 && s <= 2; }

// Strings and list lengths of one message; "" when all are within limits.
std::string checkStrings(std::initializer_list<std::pair<const char *, const std::string *>> strings,
                         const WireLimits &limits)
{
    for (const auto &[name, s] : strings)
        if (s->size() > limits.maxStringBytes)
            return std::string(name) + " is " + std::to_string(s->size()) + " bytes, over the limit of " +
                   std::to_string(limits.maxStringBytes);
    return {};
}

std::string checkCount(const char *name, int count, const WireLimits &limits)
{
    if (uint64_t(count) > limits.maxListEntries)
        return std::string(name) + " has " + std::to_string(count) + " entries, over the limit of " +
               std::to_string(limits.maxListEntries);
    return {};
}

std::string checkPeer(const wire::PeerAddress &p, const WireLimits &limits)
{
    return checkStrings({{"node id", &p.node_id()}, {"peer address", &p.address()}}, limits);
}

std::string checkAssignment(const wire::Assignment &a, const WireLimits &limits)
{
    if (auto r = checkStrings({{"reason", &a.reason()}}, limits); !r.empty())
        return r;
    for (const auto *p : {&a.previous(), &a.next(), &a.weights_from()})
        if (auto r = checkPeer(*p, limits); !r.empty())
            return r;
    if (auto r = checkCount("rings", a.rings_size(), limits); !r.empty())
        return r;
    for (const auto &ring : a.rings()) {
        if (auto r = checkCount("ring members", ring.members_size(), limits); !r.empty())
            return r;
        for (const auto &p : ring.members())
            if (auto r = checkPeer(p, limits); !r.empty())
                return r;
    }
    return {};
}

std::string checkList(const char *name, const google::protobuf::RepeatedPtrField<std::string> &list,
                      const WireLimits &limits)
{
    if (uint64_t(list.size()) > limits.maxListEntries)
        return std::string(name) + " has " + std::to_string(list.size()) + " entries, over the limit of " +
               std::to_string(limits.maxListEntries);
    for (const auto &s : list)
        if (s.size() > limits.maxStringBytes)
            return std::string("an entry of ") + name + " is " + std::to_string(s.size()) + " bytes, over the limit";
    return {};
}

} // namespace

void toEnvelope(const Message &message, wire::Envelope &envelope, std::vector<OutTensor> &tensors)
{
    std::visit(ToEnvelope{envelope, tensors}, message);
}

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
    default:
        break;
    }
    if (!reason.empty())
        out.clear();
    return out;
}

std::string checkFields(const wire::Envelope &env, const WireLimits &limits)
{
    switch (env.body_case()) {
    case E::kHello: {
        const auto &h = env.hello();
        if (auto r = checkStrings({{"node id", &h.node_id()}, {"software", &h.software()}}, limits); !r.empty())
            return r;
        return checkList("features", h.features(), limits);
    }
    case E::kHelloAck: {
        const auto &h = env.hello_ack();
        if (auto r = checkStrings({{"node id", &h.node_id()}, {"software", &h.software()}}, limits); !r.empty())
            return r;
        return checkList("features", h.features(), limits);
    }
    case E::kGoodbye:
        return checkStrings({{"reason", &env.goodbye().reason()}}, limits);
    case E::kStageError:
        return checkStrings({{"reason", &env.stage_error().reason()}}, limits);
    case E::kWeightsRequest:
        return checkList("names", env.weights_request().names(), limits);
    case E::kWeightsReply:
        for (const auto &n : env.weights_reply().tensors())
            if (auto r = checkStrings({{"tensor name", &n.name()}}, limits); !r.empty())
                return r;
        return {};
    case E::kRegistration: {
        // Documents (profile, certificates, model) are bounded by the header limit.
        const auto &r = env.registration();
        return checkStrings({{"name", &r.name()},
                             {"listen address", &r.listen_address()},
                             {"nonce", &r.nonce()},
                             {"software", &r.software()},
                             {"public key", &r.public_key_pem()}},
                            limits);
    }
    case E::kRegistrationReply: {
        const auto &r = env.registration_reply();
        if (auto e = checkStrings(
                {{"node id", &r.node_id()}, {"dataset", &r.run().dataset()}, {"run id", &r.run().run_id()}}, limits);
            !e.empty())
            return e;
        return checkAssignment(r.assignment(), limits);
    }
    case E::kAssignmentUpdate:
        return checkAssignment(env.assignment_update().assignment(), limits);
    case E::kLeave:
        return checkStrings({{"reason", &env.leave().reason()}}, limits);
    case E::kCoordinatorError:
        return checkStrings({{"reason", &env.coordinator_error().reason()}}, limits);
    default:
        return {};
    }
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
        return Ping{env.ping().nonce()};
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
        return Activations{a.microbatch_id(), a.weight_version(), std::move(t[0]),
                           t.size() == 2 ? std::move(t[1]) : TensorBuffer{}};
    }
    case E::kGradients:
        return Gradients{env.gradients().microbatch_id(), env.gradients().weight_version(), std::move(t[0])};
    case E::kRingChunk: {
        const auto &r = env.ring_chunk();
        return RingChunk{r.ring_id(), r.round(), r.step(), r.chunk_index(), std::move(t[0])};
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
        return Register{r.name(),     r.listen_address(),          r.profile_json(),  r.nonce(), r.timestamp_ms(),
                        r.software(), r.upload_bytes_per_second(), r.public_key_pem()};
    }
    case E::kRegistrationReply: {
        const auto &r = env.registration_reply();
        if (!validAssignmentState(r.assignment().state())) {
            reason = "the assignment has an unknown state " + std::to_string(int(r.assignment().state()));
            return std::nullopt;
        }
        return RegisterReply{r.node_id(),       r.certificate_pem(),      r.ca_certificate_pem(),
                             fromWire(r.run()), fromWire(r.assignment()), r.heartbeat_interval_ms()};
    }
    case E::kHeartbeat: {
        const auto &h = env.heartbeat();
        return Heartbeat{h.seq(), h.assignment_version(), fromWire(h.metrics())};
    }
    case E::kHeartbeatAck:
        return HeartbeatAck{env.heartbeat_ack().seq(), env.heartbeat_ack().assignment_version()};
    case E::kAssignmentUpdate:
        if (!validAssignmentState(env.assignment_update().assignment().state())) {
            reason = "the assignment has an unknown state " +
                     std::to_string(int(env.assignment_update().assignment().state()));
            return std::nullopt;
        }
        return AssignmentUpdate{fromWire(env.assignment_update().assignment())};
    case E::kLeave:
        return Leave{env.leave().reason()};
    case E::kCoordinatorError: {
        const auto &c = env.coordinator_error();
        return CoordinatorError{CoordinatorErrorCode(std::clamp(int(c.code()), 0, 6)), c.reason()};
    }
    case E::BODY_NOT_SET:
        break;
    }
    reason = "the header carries no message";
    return std::nullopt;
}

} // namespace rookery::net::schema
