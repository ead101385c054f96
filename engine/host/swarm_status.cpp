// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/swarm_status.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/host/engine_views.h"
#include "engine/model/model_zoo.h"
#include "engine/net/openssl_util.h"
#include "engine/net/tls_context.h"

namespace rookery::host {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using json = nlohmann::json;

std::string peerState(const json &n)
{
    const std::string presence = n.value("presence", "");
    if (presence != "online")
        return "lost";
    const std::string activity = n.value("activity", "");
    if (activity == "training" || activity == "paused")
        return activity;
    return "idle";
}

// The run's layers [first, last) by name, when the model is one this build knows.
std::vector<std::string> layersOf(const std::string &model, size_t first, size_t last)
{
    try {
        return layerNames(model::modelByName(model), first, last);
    } catch (const Error &) {
        return {"layers " + std::to_string(first) + "-" + std::to_string(last - 1)};
    }
}

} // namespace

SwarmStatusView parseSwarmStatus(std::string_view text, const std::string &selfId)
{
    SwarmStatusView view;
    try {
        const json doc = json::parse(text);
        const json &run = doc.at("run");
        const std::string model = run.value("model", "");
        view.totalSteps = run.value("total_steps", int64_t(0));
        // The layers by name: from the run itself (any model), else by the model's name.
        std::vector<std::string> names;
        if (const auto it = run.find("layer_names"); it != run.end() && it->is_array())
            for (const json &n : *it)
                names.push_back(n.is_string() ? n.get<std::string>() : std::string("?"));
        const auto layersOfRun = [&](size_t first, size_t last) {
            if (names.empty())
                return layersOf(model, first, last);
            std::vector<std::string> out;
            for (size_t i = first; i < last && i < names.size(); ++i)
                out.push_back(names[i]);
            return out;
        };
        view.self.job = run.value("job", "");
        view.self.modelLayers = run.value("layers", 0);
        view.self.modelParameters = run.value("parameters", int64_t(0));
        // Cluster ids may have gaps once clusters dissolve; the views count 0..n-1.
        std::map<int, int> clusterIndex;
        std::map<int, int> stagesOf;
        for (const json &c : doc.at("clusters")) {
            const int id = c.at("id").get<int>();
            clusterIndex.emplace(id, int(clusterIndex.size()));
            stagesOf[id] = int(c.at("stages").size());
            for (const json &st : c.at("stages"))
                if (st.value("node_id", "") == selfId) { // this node's share, as planned
                    view.self.stageParameters = st.value("parameters", int64_t(0));
                    view.self.stageMemoryBytes = st.value("memory_bytes", uint64_t(0));
                }
        }
        view.self.mode = "swarm";
        view.self.swarm = doc.value("coordinator", "");
        view.self.model = model;
        view.self.clusterCount = int(clusterIndex.size());
        for (const json &n : doc.at("nodes")) {
            PeerView p;
            p.id = n.at("id").get<std::string>();
            p.name = n.value("name", p.id.substr(0, 8));
            const int cluster = n.value("cluster", -1);
            const auto index = clusterIndex.find(cluster);
            p.cluster = index == clusterIndex.end() ? -1 : index->second;
            p.stage = n.value("stage", -1);
            p.state = peerState(n);
            p.samplesPerSecond = n.value("samples_per_second", 0.0);
            p.self = p.id == selfId;
            if (p.self) {
                view.self.reachability = n.value("reachability", "");
                view.self.reachabilityNote = n.value("reachability_note", "");
            }
            if (p.self && p.cluster >= 0 && p.stage >= 0) {
                auto &a = view.self;
                a.cluster = p.cluster;
                a.stage = p.stage;
                a.stageCount = stagesOf[cluster];
                a.role = stageRole(p.stage, a.stageCount);
                a.layers = layersOfRun(n.value("first_layer", size_t(0)), n.value("last_layer", size_t(0)));
            }
            if (p.cluster >= 0 || p.self) // unplaced volunteers have no place in the graph
                view.peers.push_back(std::move(p));
        }
        // The loss is the leaf's: it is where the pipeline computes it.
        for (const json &n : doc.at("nodes")) {
            const auto index = clusterIndex.find(n.value("cluster", -1));
            if (index != clusterIndex.end() && index->second == view.self.cluster &&
                n.value("stage", -1) + 1 == view.self.stageCount)
                view.clusterLoss = n.value("loss", 0.0);
        }
        for (const json &l : doc.at("links"))
            view.links.push_back(
                {l.at("from").get<std::string>(), l.at("to").get<std::string>(),
                 l.value("kind", "") == "ring" ? PeerLinkView::Kind::Ring : PeerLinkView::Kind::Pipeline});
    } catch (const json::exception &e) {
        throw Error(std::string("the coordinator's status is not what this build expects: ") + e.what());
    }
    return view;
}

std::string fetchSwarmStatus(const std::string &host, uint16_t port, const std::string &pin,
                             std::chrono::milliseconds timeout, const std::string &operatorToken)
{
    const std::string where = "the coordinator's status at " + host + ":" + std::to_string(port);
    asio::io_context ioc;
    const auto tls = net::makeTlsContext({}, false);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, *tls);
    stream.set_verify_mode(asio::ssl::verify_none); // the pin below is the check
    SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
    beast::error_code ec;
    asio::ip::tcp::resolver resolver(ioc);
    const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
    if (ec)
        throw Error("cannot read " + where + ": " + ec.message());
    // Beast applies a stream's deadline to asynchronous operations only: a synchronous
    // read from a coordinator that accepts and then says nothing would wait for ever.
    // One deadline covers connecting, the handshake, the request and the answer.
    auto &tcp = beast::get_lowest_layer(stream);
    tcp.expires_after(timeout);
    http::request<http::empty_body> request{http::verb::get, "/v1/status", 11};
    request.set(http::field::host, host);
    if (!operatorToken.empty())
        request.set(http::field::authorization, "Bearer " + operatorToken);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    std::optional<std::string> failure;
    bool answered = false;
    auto fail = [&failure](const std::string &why) { failure = why; };
    tcp.async_connect(endpoints, [&](beast::error_code connectError, const asio::ip::tcp::endpoint &) {
        if (connectError)
            return fail(connectError.message());
        stream.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code handshakeError) {
            if (handshakeError)
                return fail(handshakeError.message());
            X509 *cert = SSL_get0_peer_certificate(stream.native_handle());
            if (!net::ossl::matchesPin(cert, pin))
                return fail("it presented a certificate other than the one its address pins");
            http::async_write(stream, request, [&](beast::error_code writeError, size_t) {
                if (writeError)
                    return fail(writeError.message());
                http::async_read(stream, buffer, parser, [&](beast::error_code readError, size_t) {
                    if (readError)
                        return fail(readError.message());
                    answered = true;
                });
            });
        });
    });
    ioc.run_for(timeout + std::chrono::seconds(1)); // the stream's deadline ends it first
    if (failure)
        throw Error("cannot read " + where + ": " + *failure);
    if (!answered)
        throw Error("cannot read " + where + ": no answer within " + std::to_string(timeout.count()) + " ms");
    const auto &response = parser.get();
    if (response.result() != http::status::ok)
        throw Error(where + " answered " + std::to_string(response.result_int()) +
                    (response.body().empty() ? std::string() : ": " + response.body().substr(0, 300)));
    tcp.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    return response.body();
}

struct SwarmStatusFeed::Impl
{
    SwarmStatusFeedSettings settings;
    Callbacks callbacks;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    std::string lastProblem;
    std::thread thread;

    void run()
    {
        for (;;) {
            std::string problem;
            readSwarm(problem);
            if (problem != lastProblem && callbacks.problem)
                callbacks.problem(problem);
            lastProblem = problem;
            std::unique_lock lock(mutex);
            if (wake.wait_for(lock, settings.interval, [this] { return stopping; }))
                return;
        }
    }

    void readSwarm(std::string &problem)
    {
        if (settings.statusHost.empty() || !callbacks.swarm)
            return;
        try {
            const std::string json = fetchSwarmStatus(settings.statusHost, settings.statusPort, settings.pin,
                                                      std::chrono::milliseconds(1500));
            callbacks.swarm(parseSwarmStatus(json, settings.selfId));
        } catch (const Error &e) {
            if (problem.empty())
                problem = std::string(e.what()) + "; the peer graph shows this node only";
        }
    }
};

SwarmStatusFeed::SwarmStatusFeed(SwarmStatusFeedSettings settings, Callbacks callbacks)
    : d(std::make_unique<Impl>())
{
    d->settings = std::move(settings);
    d->callbacks = std::move(callbacks);
    d->thread = std::thread([impl = d.get()] { impl->run(); });
}

SwarmStatusFeed::~SwarmStatusFeed()
{
    {
        std::lock_guard lock(d->mutex);
        d->stopping = true;
    }
    d->wake.notify_all();
    d->thread.join();
}

} // namespace rookery::host
