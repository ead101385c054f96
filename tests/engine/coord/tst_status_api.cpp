// SPDX-License-Identifier: GPL-3.0-or-later
// The status API over HTTPS on loopback, read the way the desktop app's peer graph will
// read it: GET /v1/status, the WebSocket feed, and clear errors for bad requests.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <set>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "engine/common/secret_token.h"
#include "engine/coord/operator_token.h"
#include "engine/coord/status_json.h"
#include "engine/net/identity.h"
#include "engine/net/openssl_util.h"
#include "engine/net/tls_context.h"
#include "tests/engine/coord/coord_test_support.h"

using namespace rookery;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Stream = beast::ssl_stream<beast::tcp_stream>;

namespace {

struct Reply
{
    int status = 0;
    QJsonObject json;
    std::string body;
    std::string contentType;
};

// A TLS connection to the status port that checks the pinned certificate, as clients must.
class StatusClient
{
public:
    /// `from`: the local address to connect from (a second loopback address for tests of
    /// per-address limits), the system's choice when empty.
    StatusClient(uint16_t port, const std::string &pin, const std::string &from = {})
        : m_tls(net::makeTlsContext({}, false))
        , m_stream(m_ioc, *m_tls)
    {
        m_stream.set_verify_mode(asio::ssl::verify_none); // the pin below is the check
        beast::get_lowest_layer(m_stream).expires_after(10s);
        if (!from.empty()) {
            auto &socket = beast::get_lowest_layer(m_stream).socket();
            socket.open(asio::ip::tcp::v4());
            socket.bind(asio::ip::tcp::endpoint(asio::ip::make_address(from), 0));
        }
        beast::get_lowest_layer(m_stream).connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        m_stream.handshake(asio::ssl::stream_base::client);
        X509 *cert = SSL_get0_peer_certificate(m_stream.native_handle());
        QVERIFY(cert);
        QVERIFY(net::ossl::matchesPin(cert, pin));
    }

    /// `authorization`: the Authorization header's value, none when empty.
    Reply request(http::verb verb, const std::string &target, const std::string &authorization = {})
    {
        http::request<http::string_body> req{verb, target, 11};
        req.set(http::field::host, "127.0.0.1");
        if (!authorization.empty())
            req.set(http::field::authorization, authorization);
        return exchange(req);
    }

    Reply raw(const std::string &bytes)
    {
        asio::write(m_stream, asio::buffer(bytes));
        return readReply();
    }

    Stream &stream() { return m_stream; }

private:
    Reply exchange(http::request<http::string_body> &req)
    {
        http::write(m_stream, req);
        return readReply();
    }

    Reply readReply()
    {
        beast::flat_buffer buffer;
        http::response<http::string_body> res;
        http::read(m_stream, buffer, res);
        Reply r{int(res.result_int()), {}, res.body(), std::string(res[http::field::content_type])};
        r.json = QJsonDocument::fromJson(QByteArray::fromStdString(res.body())).object();
        return r;
    }

    asio::io_context m_ioc;
    std::shared_ptr<asio::ssl::context> m_tls;
    Stream m_stream;
};

} // namespace

class TestStatusApi : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<net::NetContext> m_net;
    std::unique_ptr<coord::Coordinator> m_coordinator;
    std::vector<std::unique_ptr<test::TestNode>> m_nodes;
    std::string m_pin;

    StatusClient client() { return StatusClient(m_coordinator->statusPort(), m_pin); }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_net = std::make_unique<net::NetContext>(1);
        auto s = test::testSettings(m_dir.filePath("coord").toStdString());
        s.firstPlanDelay = 300ms;
        s.statusFeedLifetime = std::chrono::seconds(3);
        m_coordinator = std::make_unique<coord::Coordinator>(s);
        m_pin = m_coordinator->coordinatorAddress().sha256;
        // Two clusters of two.
        const uint64_t memory = uint64_t(double(test::mlpDemandBytes()) * 0.6);
        for (int i = 0; i < 4; ++i) {
            m_nodes.push_back(std::make_unique<test::TestNode>());
            m_nodes.back()->start(*m_net, m_coordinator->coordinatorAddress(), 50, memory);
            coord::NodeReport report{100.0 + i, 10, 0.5, coord::NodeActivity::Training, 640, 0.9};
            if (i == 0) // its measured link to a neighbour: the operator's view shows it
                report.links["peer-of-node-0"] = {6.25e6, 41'000};
            m_nodes.back()->client->report(report);
        }
        QVERIFY(test::eventually(
            [&] { return std::all_of(m_nodes.begin(), m_nodes.end(), [](const auto &n) { return n->training(); }); }));
        QVERIFY(test::eventually([&] { return m_coordinator->counters().heartbeats >= 8; }));
    }

    void cleanupTestCase()
    {
        m_nodes.clear();
        m_coordinator.reset();
        m_net.reset();
    }

    void statusDescribesTheSwarm()
    {
        auto c = client();
        const Reply r = c.request(http::verb::get, "/v1/status");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.contentType, std::string("application/json"));
        const auto &j = r.json;
        QCOMPARE(j["swarm"].toString(), QStringLiteral("test swarm"));
        QCOMPARE(j["view"].toString(), QStringLiteral("public"));
        QCOMPARE(j["run"].toObject()["model"].toString(), QStringLiteral("mlp"));
        QCOMPARE(j["run"].toObject()["microbatch"].toInt(), 64);
        QCOMPARE(j["run"].toObject()["layer_names"].toArray().size(), 6); // for the desktop's layer list
        QCOMPARE(j["run"].toObject()["layer_names"].toArray()[1].toString(), QStringLiteral("Linear(784->512)"));
        QVERIFY(j["plan"].toObject()["planned"].toBool());
        QCOMPARE(j["plan"].toObject()["clusters"].toInt(), 2);
        QVERIFY(j["plan"].toObject()["predicted_samples_per_second"].toDouble() > 0);
        const auto nodes = j["nodes"].toArray();
        QCOMPARE(nodes.size(), 4);
        std::set<QString> ids;
        for (const auto &n : nodes) {
            const auto o = n.toObject();
            ids.insert(o["id"].toString());
            QCOMPARE(o["presence"].toString(), QStringLiteral("online"));
            QCOMPARE(o["state"].toString(), QStringLiteral("training"));
            QCOMPARE(o["activity"].toString(), QStringLiteral("training"));
            QVERIFY(o["samples_per_second"].toDouble() >= 100);
            QVERIFY(o.contains("last_seen_ms_ago") && o.contains("stage") && o.contains("first_layer"));
        }
        const auto clusters = j["clusters"].toArray();
        QCOMPARE(clusters.size(), 2);
        for (const auto &cv : clusters) {
            const auto cl = cv.toObject();
            const auto stages = cl["stages"].toArray();
            QCOMPARE(stages.size(), 2);
            double parameters = 0; // the stages' shares add up to the model
            for (const auto &s : stages) {
                QVERIFY(ids.count(s.toObject()["node_id"].toString()));
                parameters += s.toObject()["parameters"].toDouble();
            }
            QCOMPARE(parameters, j["run"].toObject()["parameters"].toDouble());
            QVERIFY(cl["measured_samples_per_second"].toDouble() >= 100);
            QVERIFY(cl["predicted_samples_per_second"].toDouble() > 0);
        }
        // Links: one pipeline link per cluster, and ring links between the clusters.
        int pipeline = 0, ring = 0;
        for (const auto &l : j["links"].toArray()) {
            const auto o = l.toObject();
            QVERIFY(ids.count(o["from"].toString()) && ids.count(o["to"].toString()));
            (o["kind"].toString() == "pipeline" ? pipeline : ring)++;
        }
        QCOMPARE(pipeline, 2);
        QVERIFY(ring >= 1);
        QVERIFY(!j["rings"].toArray().isEmpty());
        QCOMPARE(j["counts"].toObject()["online"].toInt(), 4);
        // Keep-alive: a second request on the same connection.
        QCOMPARE(c.request(http::verb::get, "/v1/status?pretty=0").status, 200);
    }

    // Anyone who can reach the status port reads the public view: no addresses, no
    // hardware. The operator's token (0600 in the data directory) gives the full view.
    void addressesNeedTheOperatorToken()
    {
        const auto tokenFile = m_coordinator->operatorTokenPath();
        const std::string token = readToken(tokenFile); // throws if others may read it
        QCOMPARE(token.size(), size_t(64));
        auto c = client();
        Reply pub = c.request(http::verb::get, "/v1/status");
        QCOMPARE(pub.status, 200);
        static const QRegularExpression ipv4(QStringLiteral("\\b\\d{1,3}(\\.\\d{1,3}){3}\\b"));
        QVERIFY2(!ipv4.match(QString::fromStdString(pub.body)).hasMatch(), pub.body.c_str());
        QVERIFY(!pub.json.contains("coordinator") && !pub.json.contains("join"));
        QCOMPARE(pub.json["nodes"].toArray().size(), 4);
        for (const auto &n : pub.json["nodes"].toArray())
            for (const char *hidden : {"address", "gflops", "memory_bytes", "upload_bytes_per_second", "links"})
                QVERIFY2(!n.toObject().contains(QLatin1String(hidden)), hidden);

        const Reply full = c.request(http::verb::get, "/v1/status", "Bearer " + token);
        QCOMPARE(full.status, 200);
        QCOMPARE(full.json["view"].toString(), QStringLiteral("full"));
        QCOMPARE(full.json["coordinator"].toString().toStdString(), m_coordinator->address());
        int withLinks = 0;
        for (const auto &n : full.json["nodes"].toArray()) {
            QVERIFY2(n.toObject()["address"].toString().startsWith("127.0.0.1:"), full.body.c_str());
            QVERIFY(n.toObject()["gflops"].toDouble() > 0);
            const auto links = n.toObject()["links"].toArray();
            if (links.isEmpty())
                continue;
            ++withLinks;
            QCOMPARE(links.size(), 1);
            QCOMPARE(links[0].toObject()["peer"].toString(), QStringLiteral("peer-of-node-0"));
            QCOMPARE(links[0].toObject()["upload_bytes_per_second"].toDouble(), 6.25e6);
            QCOMPARE(links[0].toObject()["round_trip_us"].toInt(), 41'000);
        }
        QCOMPARE(withLinks, 1);
        QCOMPARE(full.json["nodes"].toArray().size(), 4);

        // A wrong token is refused, not quietly given the public view.
        for (const std::string &bad :
             std::vector<std::string>{"Bearer " + std::string(64, '0'), "Bearer ", "Basic " + token, token}) {
            auto c2 = client();
            const Reply r = c2.request(http::verb::get, "/v1/status", bad);
            QCOMPARE(r.status, 401);
            QVERIFY2(r.json["error"].toString().contains("operator-token"), r.body.c_str());
        }

        // The feed, too: public without the token, full with it.
        for (const bool withToken : {false, true}) {
            auto c3 = client();
            websocket::stream<Stream &> ws(c3.stream());
            if (withToken)
                ws.set_option(websocket::stream_base::decorator(
                    [&](websocket::request_type &req) { req.set(http::field::authorization, "Bearer " + token); }));
            ws.handshake("127.0.0.1", "/v1/status/feed");
            beast::flat_buffer b;
            ws.read(b);
            const auto j =
                QJsonDocument::fromJson(QByteArray::fromStdString(beast::buffers_to_string(b.data()))).object();
            QCOMPARE(j["view"].toString(), withToken ? QStringLiteral("full") : QStringLiteral("public"));
            QCOMPARE(j["nodes"].toArray().first().toObject().contains("address"), withToken);
            ws.close(websocket::close_code::normal);
        }

        // A restarted coordinator keeps its token (the file is read, not remade).
        QCOMPARE(coord::loadOrCreateOperatorToken(tokenFile.parent_path()), token);
    }

    // A reachability note names the address the coordinator dialled; the public view
    // keeps the verdict's reason and drops the addresses.
    void publicNotesNameNoAddress()
    {
        coord::StatusInputs in;
        in.run = m_coordinator->run();
        in.address = "wss://coordinator.example:7400/#sha256=00";
        coord::NodeStatus n;
        n.nodeId = "n1";
        n.name = "home-b1";
        n.address = "203.0.113.5:4100";
        n.reachability = coord::Reachability::Unreachable;
        n.reachabilityNote = "peers cannot dial it at 203.0.113.5:4100: no handshake within 5 s (via 198.51.100.7, "
                             "[2001:db8::1]:4100)";
        in.nodes.push_back(n);
        const auto pub =
            QJsonDocument::fromJson(QByteArray::fromStdString(coord::statusJson(in, coord::StatusView::Public)))
                .object();
        const QString note = pub["nodes"].toArray().first().toObject()["reachability_note"].toString();
        QCOMPARE(note, QStringLiteral("peers cannot dial it at its address: no handshake within 5 s (via an address, "
                                      "an address)"));
        QVERIFY(!pub.contains("coordinator"));
        const auto full =
            QJsonDocument::fromJson(QByteArray::fromStdString(coord::statusJson(in, coord::StatusView::Full))).object();
        QCOMPARE(full["nodes"].toArray().first().toObject()["reachability_note"].toString().toStdString(),
                 n.reachabilityNote);
        QCOMPARE(full["coordinator"].toString().toStdString(), in.address);
    }

    void badRequestsGetClearErrors()
    {
        auto c1 = client();
        Reply r = c1.request(http::verb::get, "/v1/nodes");
        QCOMPARE(r.status, 404);
        QCOMPARE(r.contentType, std::string("application/json"));
        QVERIFY2(r.json["error"].toString().contains("no such path '/v1/nodes'"), r.body.c_str());
        r = c1.request(http::verb::post, "/v1/status");
        QCOMPARE(r.status, 405);
        QVERIFY2(r.json["error"].toString().contains("read-only"), r.body.c_str());
        r = c1.request(http::verb::get, "/v1/status/feed");
        QCOMPARE(r.status, 400);
        QVERIFY2(r.json["error"].toString().contains("WebSocket"), r.body.c_str());
        r = c1.request(http::verb::get, "/metrics"); // Prometheus text (tst_metrics parses it)
        QCOMPARE(r.status, 200);
        QVERIFY2(r.contentType.starts_with("text/plain; version=0.0.4"), r.contentType.c_str());
        QVERIFY2(r.body.find("\nrookery_coordinator_peers 4\n") != std::string::npos, r.body.c_str());
        auto c2 = client();
        r = c2.raw("HELLO\x01WORLD\r\n\r\n");
        QCOMPARE(r.status, 400);
        QVERIFY2(r.json["error"].toString().startsWith("malformed HTTP request: "), r.body.c_str());
    }

    void feedPushesTheStatus()
    {
        auto c = client();
        websocket::stream<Stream &> ws(c.stream());
        ws.handshake("127.0.0.1", "/v1/status/feed");
        for (int i = 0; i < 2; ++i) { // the first at once, the next within the feed interval
            beast::flat_buffer b;
            ws.read(b);
            QVERIFY(ws.got_text());
            const auto j =
                QJsonDocument::fromJson(QByteArray::fromStdString(beast::buffers_to_string(b.data()))).object();
            QCOMPARE(j["nodes"].toArray().size(), 4);
            QCOMPARE(j["swarm"].toString(), QStringLiteral("test swarm"));
        }
        ws.close(websocket::close_code::normal);
    }

    // A feed ends after its lifetime (3 s here) with a close frame that says so.
    void feedEndsAfterItsLifetime()
    {
        auto c = client();
        websocket::stream<Stream &> ws(c.stream());
        ws.handshake("127.0.0.1", "/v1/status/feed");
        const auto started = std::chrono::steady_clock::now();
        beast::error_code ec;
        for (int i = 0; i < 100 && !ec; ++i) { // a message every 200 ms, then the close
            beast::flat_buffer b;
            ws.read(b, ec);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QCOMPARE(ec, beast::error_code(websocket::error::closed));
        QCOMPARE(ws.reason().code, websocket::close_code::going_away);
        QVERIFY2(std::string(ws.reason().reason).find("lifetime") != std::string::npos, ws.reason().reason.c_str());
        QVERIFY2(seconds >= 2.5 && seconds < 10, qPrintable(QString::number(seconds)));
    }

    void feedIsOnlyAtItsPath()
    {
        auto c = client();
        const Reply r = c.raw("GET /v1/feed HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                              "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
        QCOMPARE(r.status, 404);
        QVERIFY2(r.json["error"].toString().contains("/v1/status/feed"), r.body.c_str());
    }

    // Last of all: it leaves 127.0.0.1 at its cap while the coordinator reaps the
    // connections it held, so a test after it could be refused (under ctest -j3 the next
    // test's handshake was reset).
    // One address gets at most its share of the status port's connections (32 of 256):
    // past it a new connection is closed at once, while another address is still served,
    // and a place frees when one of its connections closes.
    void oneAddressHoldsAtMostItsShareOfConnections()
    {
        const uint16_t port = m_coordinator->statusPort();
        const auto served = [&](const std::string &from) {
            try {
                StatusClient c(port, m_pin, from);
                return c.request(http::verb::get, "/v1/status").status == 200;
            } catch (const std::exception &) {
                return false; // closed before the handshake ended
            }
        };
        std::vector<std::unique_ptr<StatusClient>> held;
        bool refused = false;
        for (int i = 0; i < 64 && !refused; ++i) {
            try {
                auto c = std::make_unique<StatusClient>(port, m_pin);
                if (c->request(http::verb::get, "/v1/status").status != 200)
                    refused = true;
                else
                    held.push_back(std::move(c));
            } catch (const std::exception &) {
                refused = true;
            }
        }
        QVERIFY(refused);
        // Earlier tests' connections may not all have closed yet: up to the cap, not exactly.
        QVERIFY2(held.size() >= 24 && held.size() <= 32, qPrintable(QString::number(held.size())));
        QVERIFY(!served("127.0.0.1"));
        QVERIFY(served("127.0.0.2"));
        held.pop_back();
        QVERIFY(test::waitFor([&] { return served("127.0.0.1"); }, 5s));
    }
};

QTEST_APPLESS_MAIN(TestStatusApi)
#include "tst_status_api.moc"
