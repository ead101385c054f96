// SPDX-License-Identifier: GPL-3.0-or-later
// The receiver's limits on an Envelope's strings and lists, checked before any of it
// becomes a message (docs/protocol.md, "Coordinator messages").
#include "engine/net/wire_schema.h"

#include <cmath>

namespace rookery::net::schema {
namespace {

using E = wire::Envelope;

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
        for (const auto *p : {&ring.previous(), &ring.next()})
            if (auto r = checkPeer(*p, limits); !r.empty())
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
        if (r.relay_port() > 65535)
            return "a relay port is at most 65535, not " + std::to_string(r.relay_port());
        return checkStrings({{"name", &r.name()},
                             {"listen address", &r.listen_address()},
                             {"nonce", &r.nonce()},
                             {"software", &r.software()},
                             {"public key", &r.public_key_pem()},
                             {"invite", &r.invite()}},
                            limits);
    }
    case E::kRegistrationReply: {
        const auto &r = env.registration_reply();
        if (auto e = checkStrings({{"node id", &r.node_id()},
                                   {"dataset", &r.run().dataset()},
                                   {"dataset hash", &r.run().dataset_sha256()},
                                   {"run id", &r.run().run_id()}},
                                  limits);
            !e.empty())
            return e;
        return checkAssignment(r.assignment(), limits);
    }
    case E::kAssignmentUpdate:
        return checkAssignment(env.assignment_update().assignment(), limits);
    case E::kLeave:
        return checkStrings({{"reason", &env.leave().reason()}}, limits);
    case E::kRelayRequest:
        return checkStrings({{"peer id", &env.relay_request().peer_id()}}, limits);
    case E::kRelayGrant: {
        const auto &g = env.relay_grant();
        if (!g.token().empty() && g.token().size() != 16)
            return "a relay token has 16 bytes, not " + std::to_string(g.token().size());
        return checkStrings({{"peer id", &g.peer_id()}, {"relay address", &g.address()}, {"reason", &g.reason()}},
                            limits);
    }
    case E::kRelayExpect: {
        const auto &e = env.relay_expect();
        if (e.token_a().size() != 16 || e.token_b().size() != 16)
            return "relay tokens have 16 bytes, not " + std::to_string(e.token_a().size()) + " and " +
                   std::to_string(e.token_b().size());
        return checkStrings({{"node id", &e.node_a()}, {"node id", &e.node_b()}}, limits);
    }
    case E::kCoordinatorError:
        return checkStrings({{"reason", &env.coordinator_error().reason()}}, limits);
    case E::kPing:
        if (env.ping().padding().size() > kMaxPingPaddingBytes)
            return "a ping's padding of " + std::to_string(env.ping().padding().size()) +
                   " bytes is over the limit of " + std::to_string(kMaxPingPaddingBytes);
        return {};
    case E::kBanList:
        return checkList("banned node ids", env.ban_list().node_ids(), limits);
    case E::kDataRequest:
        return checkStrings({{"data file hash", &env.data_request().sha256()}}, limits);
    case E::kDataPiece:
        return checkStrings({{"data file hash", &env.data_piece().sha256()}, {"reason", &env.data_piece().reason()}},
                            limits);
    case E::kHeartbeat: {
        const auto &complaints = env.heartbeat().metrics().complaints();
        if (auto r = checkCount("complaints", complaints.size(), limits); !r.empty())
            return r;
        for (const auto &c : complaints)
            if (auto r = checkStrings({{"complaint peer id", &c.peer_id()}}, limits); !r.empty())
                return r;
        const auto &links = env.heartbeat().metrics().links();
        if (auto r = checkCount("link figures", links.size(), limits); !r.empty())
            return r;
        for (const auto &l : links) {
            if (auto r = checkStrings({{"link figure peer id", &l.peer_id()}}, limits); !r.empty())
                return r;
            const double rate = l.upload_bytes_per_second();
            if (!std::isfinite(rate) || rate < 0)
                return "a link figure's upload of " + std::to_string(rate) +
                       " bytes/s is not a finite, non-negative number";
        }
        const double scale = env.heartbeat().metrics().compute_offer_scale();
        if (!std::isfinite(scale) || scale < 0 || scale > 1e3)
            return "a compute offer scale of " + std::to_string(scale) + " is not a number from 0 to 1000";
        return {};
    }
    default:
        return {};
    }
}

} // namespace rookery::net::schema
