// SPDX-License-Identifier: GPL-3.0-or-later
// Message -> Envelope: our structs into the generated protobuf types, and the tensors in
// body order for the codec to append.
#include "engine/net/wire_schema.h"

#include "engine/common/error.h"

namespace rookery::net::schema {
namespace {

wire::Role toWire(NodeRole r) { return r == NodeRole::Coordinator ? wire::ROLE_COORDINATOR : wire::ROLE_NODE; }
wire::Compression toWire(Compression c) { return wire::Compression(int(c)); }
wire::GoodbyeCode toWire(GoodbyeCode c) { return wire::GoodbyeCode(int(c)); }

template <class List> void copyList(const std::vector<std::string> &in, List *out)
{
    for (const auto &s : in)
        *out->Add() = s;
}

void toWire(const PeerAddress &in, wire::PeerAddress *out)
{
    out->set_node_id(in.nodeId);
    out->set_address(in.address);
    out->set_unreachable(in.unreachable);
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
        m->set_size(r.size);
        if (!r.previous.empty())
            toWire(r.previous, m->mutable_previous());
        if (!r.next.empty())
            toWire(r.next, m->mutable_next());
    }
    w->set_shard_index(a.shardIndex);
    w->set_shard_count(a.shardCount);
    if (!a.weightsFrom.empty())
        toWire(a.weightsFrom, w->mutable_weights_from());
    w->set_unreachable(a.unreachable);
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
    w->set_outer_learning_rate(r.outerLearningRate);
    w->set_outer_momentum(r.outerMomentum);
    w->set_overlap_averaging(r.overlapAveraging);
    w->set_dataset_sha256(r.datasetSha256);
    w->set_max_window(r.maxWindow);
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
    void operator()(const Ping &m)
    {
        env.mutable_ping()->set_nonce(m.nonce);
        if (!m.padding.empty())
            env.mutable_ping()->set_padding(m.padding);
    }
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
        a->set_evaluation(m.evaluation);
        a->set_test_id(m.testId);
        a->set_test_last(m.testLast);
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
        if (m.tally) {
            auto *t = g->mutable_tally();
            t->set_samples(m.tally->samples);
            t->set_correct(m.tally->correct);
            t->set_loss_sum(m.tally->lossSum);
        }
    }
    void operator()(const RingChunk &m)
    {
        auto *r = env.mutable_ring_chunk();
        r->set_ring_id(m.ringId);
        r->set_round(m.round);
        r->set_step(m.step);
        r->set_chunk_index(m.chunkIndex);
        r->set_base(m.base);
        out.push_back({&m.tensor, r->mutable_tensor(), false, "ring chunk", m.precision});
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
        r->set_relay_port(m.relayPort);
        r->set_invite(m.invite);
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
        x->set_away(wire::AwayReason(int(m.metrics.away)));
        x->set_slept_seconds(m.metrics.sleptSeconds);
        x->set_own_samples_per_second(m.metrics.ownSamplesPerSecond);
        for (const auto &[peer, refused] : m.metrics.complaints) {
            auto *c = x->add_complaints();
            c->set_peer_id(peer);
            c->set_refused(refused);
        }
        for (const auto &f : m.metrics.links) {
            auto *l = x->add_links();
            l->set_peer_id(f.peerId);
            l->set_upload_bytes_per_second(f.uploadBytesPerSecond);
            l->set_round_trip_us(f.roundTripUs);
        }
        x->set_compute_offer_scale(m.metrics.computeOfferScale);
    }
    void operator()(const HeartbeatAck &m)
    {
        env.mutable_heartbeat_ack()->set_seq(m.seq);
        env.mutable_heartbeat_ack()->set_assignment_version(m.assignmentVersion);
        env.mutable_heartbeat_ack()->set_heartbeat_interval_ms(m.heartbeatIntervalMs);
    }
    void operator()(const AssignmentUpdate &m)
    {
        toWire(m.assignment, env.mutable_assignment_update()->mutable_assignment());
    }
    void operator()(const Leave &m) { env.mutable_leave()->set_reason(m.reason); }
    void operator()(const RelayRequest &m) { env.mutable_relay_request()->set_peer_id(m.peerId); }
    void operator()(const RelayGrant &m)
    {
        auto *g = env.mutable_relay_grant();
        g->set_peer_id(m.peerId);
        g->set_address(m.address);
        g->set_token(m.token);
        g->set_accept(m.accept);
        g->set_reason(m.reason);
    }
    void operator()(const RelayExpect &m)
    {
        auto *e = env.mutable_relay_expect();
        e->set_node_a(m.nodeA);
        e->set_node_b(m.nodeB);
        e->set_token_a(m.tokenA);
        e->set_token_b(m.tokenB);
    }
    void operator()(const BanList &m)
    {
        auto *b = env.mutable_ban_list();
        for (const auto &id : m.nodeIds)
            b->add_node_ids(id);
    }
    void operator()(const DataRequest &m)
    {
        auto *r = env.mutable_data_request();
        r->set_sha256(m.sha256);
        r->set_offset(m.offset);
        r->set_length(m.length);
    }
    void operator()(const DataPiece &m)
    {
        auto *p = env.mutable_data_piece();
        p->set_sha256(m.sha256);
        p->set_offset(m.offset);
        p->set_total(m.total);
        p->set_reason(m.reason);
        if (!m.data.empty())
            tensor(m.data, p->mutable_data(), false, "data");
    }
    void operator()(const CoordinatorError &m)
    {
        env.mutable_coordinator_error()->set_code(wire::CoordinatorErrorCode(int(m.code)));
        env.mutable_coordinator_error()->set_reason(m.reason);
    }
};

} // namespace

void toEnvelope(const Message &message, wire::Envelope &envelope, std::vector<OutTensor> &tensors)
{
    std::visit(ToEnvelope{envelope, tensors}, message);
}

} // namespace rookery::net::schema
