// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/relay_links.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "bench/support/link_pump.h"
#include "engine/common/error.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/dialer.h"
#include "engine/net/identity.h"
#include "engine/net/listener.h"
#include "engine/net/net_context.h"
#include "engine/relay/relay_server.h"

namespace rookery::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Both ends of one link and what arrived at each.
struct Ends
{
    std::mutex mutex;
    std::condition_variable changed;
    std::shared_ptr<net::Link> sender, receiver; // opened links
    uint64_t echoes = 0;                         // small messages back at the sender
    Flow flow;                                   // the bulk tensors, sender to receiver

    net::LinkEvents events(bool receiving)
    {
        net::LinkEvents e;
        e.opened = [this, receiving](const std::shared_ptr<net::Link> &l) {
            std::lock_guard lock(mutex);
            (receiving ? receiver : sender) = l;
            changed.notify_all();
        };
        e.message = [this, receiving](const std::shared_ptr<net::Link> &l, net::Message &&m) {
            if (auto *ping = std::get_if<net::StageError>(&m)) { // a small message: echo it, or count the echo
                if (receiving) {
                    l->send(*ping);
                    return;
                }
                std::lock_guard lock(mutex);
                ++echoes;
                changed.notify_all();
            } else if (auto *a = std::get_if<net::Activations>(&m)) {
                flow.onTensor(a->activations.bytes);
            }
        };
        e.writable = [this](const std::shared_ptr<net::Link> &) { flow.onWritable(); };
        return e;
    }

    template <class Predicate> void await(Predicate p, const char *what)
    {
        std::unique_lock lock(mutex);
        if (!changed.wait_for(lock, std::chrono::seconds(60), p))
            throw Error(std::string("bench_relay: ") + what + " did not happen within 60 s");
    }
};

net::TlsCredentials credentialsOf(const net::CertificateAuthority &ca, const net::Identity &id)
{
    return {ca.issue(id.publicKeyPem()), id.privateKeyPem(), ca.certificatePem()};
}

} // namespace

LinkFigures measureLink(relay::RelayServer *relay, int messages, size_t messageBytes, int pings)
{
    const net::CertificateAuthority ca = net::CertificateAuthority::create("bench swarm");
    const net::Identity a = net::Identity::generate(), b = net::Identity::generate();
    net::NetContext context(2);
    Ends ends;
    net::LinkConfig la, lb;
    la.nodeId = a.nodeId();
    lb.nodeId = b.nodeId();
    std::unique_ptr<net::Listener> listener;
    std::shared_ptr<net::Link> dialledA, dialledB;
    if (relay) {
        const auto [ta, tb] = relay->expectPair(a.nodeId(), b.nodeId());
        for (int side = 0; side < 2; ++side) {
            net::RelayedDialConfig rc;
            rc.host = "127.0.0.1";
            rc.port = relay->port();
            rc.token = relay::tokenToBytes(side == 0 ? ta : tb);
            rc.accept = side == 1;
            rc.credentials = credentialsOf(ca, side == 0 ? a : b);
            rc.peer.kind = net::PeerCheck::Kind::SwarmCa;
            rc.peer.expectedNodeId = side == 0 ? b.nodeId() : a.nodeId();
            rc.link = side == 0 ? la : lb;
            (side == 0 ? dialledA : dialledB) = net::dialRelayed(context, std::move(rc), ends.events(side == 1));
        }
    } else {
        net::ListenerConfig lc;
        lc.bindAddress = "127.0.0.1";
        lc.credentials = credentialsOf(ca, b);
        lc.clients.kind = net::PeerCheck::Kind::SwarmCa;
        lc.link = lb;
        listener = std::make_unique<net::Listener>(context, lc, ends.events(true));
        net::DialConfig dc;
        dc.host = "127.0.0.1";
        dc.port = listener->port();
        dc.credentials = credentialsOf(ca, a);
        dc.server.kind = net::PeerCheck::Kind::SwarmCa;
        dc.server.expectedNodeId = b.nodeId();
        dc.link = la;
        dc.reconnect = false;
        dialledA = net::dial(context, std::move(dc), ends.events(false));
    }
    ends.await([&] { return ends.sender && ends.receiver; }, "the link opening");

    // One payload, shared by every message (sending copies it into the frame).
    const auto payload = tensorBufferFromBytes(DType::Float32, {int64_t(messageBytes / 4)},
                                               std::vector<uint8_t>(messageBytes, uint8_t(0x5a)));
    LinkFigures f;
    f.bytesPerSecond = pump(*ends.sender, ends.flow, payload, uint64_t(messages) * messageBytes);

    for (int i = 0; i < pings; ++i) {
        const auto sent = Clock::now();
        const uint64_t before = [&] {
            std::lock_guard lock(ends.mutex);
            return ends.echoes;
        }();
        ends.sender->send(net::StageError{0, uint64_t(i), "ping"});
        ends.await([&] { return ends.echoes > before; }, "an echo");
        f.roundTrips.push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
    }
    std::sort(f.roundTrips.begin(), f.roundTrips.end());
    ends.sender->close("done");
    if (dialledB)
        dialledB->close("done");
    return f;
}

} // namespace rookery::bench
