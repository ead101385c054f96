// SPDX-License-Identifier: GPL-3.0-or-later
// One sample of every wire message and a field-by-field comparison, shared by the
// codec and link tests.
#pragma once

#include <cstring>
#include <vector>

#include "engine/net/wire_message.h"

namespace rookery::test {

inline TensorBuffer floatTensor(std::vector<int64_t> shape, float seed)
{
    int64_t n = 1;
    for (auto d : shape)
        n *= d;
    std::vector<uint8_t> bytes(size_t(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
        const float v = seed + float(i % 32) * 0.25f - float(i % 7); // exact in fp16 and bf16
        std::memcpy(bytes.data() + i * 4, &v, 4);
    }
    return tensorBufferFromBytes(DType::Float32, std::move(shape), std::move(bytes));
}

inline TensorBuffer labelTensor(int64_t n)
{
    std::vector<uint8_t> bytes(size_t(n) * 8);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t v = i % 10;
        std::memcpy(bytes.data() + i * 8, &v, 8);
    }
    return tensorBufferFromBytes(DType::Int64, {n}, std::move(bytes));
}

/// One message of each type, with tensors of odd sizes (padding gets exercised).
inline std::vector<net::Message> sampleMessages()
{
    using namespace net;
    std::vector<Message> m;
    m.push_back(Hello{1, 3, "ab12", NodeRole::Node, {"compress-fp16", "compress-bf16"}, Compression::Bf16, "t"});
    m.push_back(HelloAck{2, "cd34", NodeRole::Coordinator, {"compress-fp16"}, Compression::Fp16, "t"});
    m.push_back(Ping{0xfeedfacecafebeefull, std::string(300, 'p')}); // padded: an upload probe's
    m.push_back(Pong{42});
    m.push_back(Goodbye{GoodbyeCode::ShuttingDown, "node is shutting down"});
    m.push_back(Activations{7, 3, floatTensor({5, 13}, 1.5f), labelTensor(5)});
    m.push_back(Activations{8, 3, floatTensor({2, 3}, 2.0f), {}});
    m.push_back(Gradients{7, 3, floatTensor({5, 13}, -0.5f)});
    m.push_back(RingChunk{99, 12, 5, 2, floatTensor({1001}, 0.75f), 0x1234567890abcdefull});
    m.push_back(WeightsRequest{5, 2, {"3.weight", "3.bias"}});
    m.push_back(WeightsReply{5, 2, 17, {{"3.weight", floatTensor({4, 3}, 0.5f)}, {"3.bias", floatTensor({4}, 0.1f)}}});
    m.push_back(WeightsReply{6, 2, 17, {}});
    m.push_back(StageError{2, 7, "out of memory"});
    // Coordinator messages.
    AssignmentInfo a;
    a.version = 4;
    a.state = AssignmentState::Training;
    a.reason = "joined cluster 1";
    a.cluster = 1;
    a.clusterCount = 3;
    a.stage = 1;
    a.stages = 2;
    a.firstLayer = 2;
    a.lastLayer = 5;
    a.previous = {"aa11", "10.0.0.1:7401"};
    a.rings = {
        RingMembership{(uint64_t(2) << 32) | 5, 2, 5, 1, 3, {"bb22", "10.0.0.2:7401"}, {"cc33", "[::1]:7401", true}},
        RingMembership{(uint64_t(5) << 32) | 6, 5, 6, 0, 1, {}, {}}};
    a.unreachable = true; // behind NAT: it dials its peers
    a.shardIndex = 1;
    a.shardCount = 3;
    a.weightsFrom = {"bb22", "10.0.0.2:7401"};
    RunInfo run{
        "{\"name\":\"mlp\"}", "{\"kind\":\"sgd\"}", 64, 2, 10, 7, 1000, "fashion-mnist", "run-1", 0.7, 0.9, true,
        std::string(64, 'a')};
    run.maxWindow = 4;
    m.push_back(Register{"laptop", "0.0.0.0:7401", "{\"cpu_model\":\"x\"}", std::string(16, '\x5a'), 1714000000123, "t",
                         12.5e6, "-----BEGIN PUBLIC KEY-----", 7402, "0123456789abcdef0123456789abcdef"});
    m.push_back(RegisterReply{"dd44", "-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----", run, a, 1000});
    m.push_back(Heartbeat{9, 4, {123.5, 77, 0.25, NodeActivity::Training, 4928, 0.75}});
    m.push_back(Heartbeat{10, 4, {0, 77, 0.25, NodeActivity::Paused, 4928, 0, AwayReason::OnBattery, 3600, 812.5}});
    NodeMetrics withLinks{50, 12, 0.5, NodeActivity::Training, 640, 0.5};
    withLinks.complaints = {{"ee55", 2}};
    withLinks.links = {{"bb22", 6.25e6, 41'000}, {"cc33", 0, 0}};
    withLinks.computeOfferScale = 1.0 / 3;
    m.push_back(Heartbeat{11, 4, withLinks});
    m.push_back(HeartbeatAck{9, 5, 4500});
    m.push_back(AssignmentUpdate{a});
    m.push_back(AssignmentUpdate{AssignmentInfo{}});
    m.push_back(Leave{"shutting down"});
    m.push_back(CoordinatorError{CoordinatorErrorCode::Replay, "the registration nonce was seen before"});
    m.push_back(RelayRequest{"bb22"});
    m.push_back(RelayGrant{"aa11", "198.51.101.1:7402", std::string(16, '\x3c'), true, ""});
    m.push_back(RelayGrant{"aa11", "", "", false, "the relay is full"});
    m.push_back(RelayExpect{"aa11", "bb22", std::string(16, '\x3c'), std::string(16, '\x3d')});
    m.push_back(BanList{{"aa11", "bb22"}});
    m.push_back(DataRequest{std::string(64, 'e'), 1 << 20, 1 << 20});
    m.push_back(DataPiece{std::string(64, 'e'), 1 << 20, 3 << 20,
                          tensorBufferFromBytes(DType::UInt8, {5}, {1, 2, 3, 4, 5}), ""});
    m.push_back(DataPiece{std::string(64, 'f'), 0, 0, {}, "this coordinator serves no such file"});
    m.push_back(Activations{9, 4, floatTensor({3, 13}, 0.25f), labelTensor(3), true, 3, true}); // a test's last batch
    m.push_back(Gradients{9, 0, floatTensor({0}, 0), TestTally{300, 271, 98.5}});               // its answer
    return m;
}

inline bool sameMessage(const net::Message &a, const net::Message &b)
{
    using namespace net;
    if (a.index() != b.index())
        return false;
    if (auto *x = std::get_if<Activations>(&a)) {
        auto &y = std::get<Activations>(b);
        return x->microbatchId == y.microbatchId && x->weightVersion == y.weightVersion &&
               sameTensor(x->activations, y.activations) && sameTensor(x->labels, y.labels) &&
               x->evaluation == y.evaluation && x->testId == y.testId && x->testLast == y.testLast;
    }
    if (auto *x = std::get_if<Gradients>(&a)) {
        auto &y = std::get<Gradients>(b);
        return x->microbatchId == y.microbatchId && x->weightVersion == y.weightVersion && x->tally == y.tally &&
               // A tensor of no bytes may arrive pointing into the frame, where none was sent.
               (sameTensor(x->gradients, y.gradients) ||
                (x->gradients.bytes == 0 && y.gradients.bytes == 0 && x->gradients.shape == y.gradients.shape));
    }
    if (auto *x = std::get_if<RingChunk>(&a)) {
        auto &y = std::get<RingChunk>(b);
        return x->ringId == y.ringId && x->round == y.round && x->step == y.step && x->chunkIndex == y.chunkIndex &&
               x->base == y.base && sameTensor(x->tensor, y.tensor);
    }
    if (auto *x = std::get_if<WeightsReply>(&a)) {
        auto &y = std::get<WeightsReply>(b);
        if (x->requestId != y.requestId || x->stage != y.stage || x->weightVersion != y.weightVersion ||
            x->tensors.size() != y.tensors.size())
            return false;
        for (size_t i = 0; i < x->tensors.size(); ++i)
            if (x->tensors[i].name != y.tensors[i].name || !sameTensor(x->tensors[i].tensor, y.tensors[i].tensor))
                return false;
        return true;
    }
    if (auto *x = std::get_if<DataPiece>(&a)) {
        auto &y = std::get<DataPiece>(b);
        return x->sha256 == y.sha256 && x->offset == y.offset && x->total == y.total && x->reason == y.reason &&
               x->data.empty() == y.data.empty() && (x->data.empty() || sameTensor(x->data, y.data));
    }
    return std::visit(
        [&](const auto &x) -> bool {
            using T = std::decay_t<decltype(x)>;
            if constexpr (requires { x == x; })
                return x == std::get<T>(b);
            else
                return false;
        },
        a);
}

} // namespace rookery::test
