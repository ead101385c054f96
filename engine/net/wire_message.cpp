// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/wire_message.h"

#include <cstring>

#include "engine/common/error.h"

namespace rookery::net {
namespace {

template <class T> struct NameOf;
#define ROOKERY_MESSAGE_NAME(T)                                                                                        \
    template <> struct NameOf<T>                                                                                       \
    {                                                                                                                  \
        static constexpr std::string_view value = #T;                                                                  \
    };
ROOKERY_MESSAGE_NAME(Hello)
ROOKERY_MESSAGE_NAME(HelloAck)
ROOKERY_MESSAGE_NAME(Ping)
ROOKERY_MESSAGE_NAME(Pong)
ROOKERY_MESSAGE_NAME(Goodbye)
ROOKERY_MESSAGE_NAME(Activations)
ROOKERY_MESSAGE_NAME(Gradients)
ROOKERY_MESSAGE_NAME(RingChunk)
ROOKERY_MESSAGE_NAME(WeightsRequest)
ROOKERY_MESSAGE_NAME(WeightsReply)
ROOKERY_MESSAGE_NAME(StageError)
ROOKERY_MESSAGE_NAME(Register)
ROOKERY_MESSAGE_NAME(RegisterReply)
ROOKERY_MESSAGE_NAME(Heartbeat)
ROOKERY_MESSAGE_NAME(HeartbeatAck)
ROOKERY_MESSAGE_NAME(AssignmentUpdate)
ROOKERY_MESSAGE_NAME(Leave)
ROOKERY_MESSAGE_NAME(RelayRequest)
ROOKERY_MESSAGE_NAME(RelayGrant)
ROOKERY_MESSAGE_NAME(RelayExpect)
ROOKERY_MESSAGE_NAME(CoordinatorError)
ROOKERY_MESSAGE_NAME(BanList)
ROOKERY_MESSAGE_NAME(DataRequest)
ROOKERY_MESSAGE_NAME(DataPiece)
#undef ROOKERY_MESSAGE_NAME

} // namespace

std::string_view compressionName(Compression c)
{
    switch (c) {
    case Compression::None:
        return "none";
    case Compression::Fp16:
        return "fp16";
    case Compression::Bf16:
        return "bf16";
    }
    return "?";
}

Compression compressionFromName(std::string_view name)
{
    for (auto c : {Compression::None, Compression::Fp16, Compression::Bf16})
        if (compressionName(c) == name)
            return c;
    throw Error("unknown compression '" + std::string(name) + "' (none, fp16, bf16)");
}

std::string_view messageName(const Message &message)
{
    return std::visit([](const auto &m) { return NameOf<std::decay_t<decltype(m)>>::value; }, message);
}

bool sameTensor(const TensorBuffer &a, const TensorBuffer &b)
{
    if (a.dtype != b.dtype || a.shape != b.shape || a.bytes != b.bytes || a.empty() != b.empty())
        return false;
    return a.bytes == 0 || std::memcmp(a.data, b.data, a.bytes) == 0;
}

} // namespace rookery::net
